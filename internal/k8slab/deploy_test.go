package k8slab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/k8slab"
)

const (
	deployDir = "../../deploy"
	ns        = "netperfkit"
	run       = "run1"
	jobName   = "cachebench-" + run
	nodes     = 1000
)

// render fills a manifest's placeholders as its header's example command
// does: __START_AT__ an RFC 3339 time in UTC, __RUN__ the run's name.
func render(b []byte, startAt time.Time) []byte {
	b = bytes.ReplaceAll(b, []byte("__START_AT__"), []byte(startAt.UTC().Format(time.RFC3339)))
	return bytes.ReplaceAll(b, []byte("__RUN__"), []byte(run))
}

// manifest is deploy/name, rendered.
func manifest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	require.NoError(t, err)
	return render(b, time.Now().Add(time.Hour))
}

// documents counts a YAML stream's documents that hold an object.
func documents(b []byte) int {
	n := 0
	for _, d := range strings.Split("\n"+string(b), "\n---") {
		if strings.Contains(d, "\nkind:") {
			n++
		}
	}
	return n
}

func TestRender(t *testing.T) {
	at := time.Date(2026, 12, 6, 17, 0, 0, 0, time.FixedZone("x", 3600))
	got := string(render([]byte("name: cachebench-__RUN__\nvalue: \"__START_AT__\"\n"), at))
	assert.Equal(t, "name: cachebench-run1\nvalue: \"2026-12-06T16:00:00Z\"\n", got)
	assert.Equal(t, 2, documents([]byte("# c\nkind: A\n---\nkind: B\n---\n# only a comment\n")))
}

// TestControlPlaneDeploy reads every manifest in deploy/ with a real
// kube-apiserver, and runs the Indexed Job and the DaemonSet with a real
// kube-controller-manager (issue 41). It runs in make k8s-test.
func TestControlPlaneDeploy(t *testing.T) {
	cp := k8slab.Start(t)
	ctx := context.Background()
	// A server-side dry run of a file cannot see the namespace the file
	// creates: create it first.
	_, err := cp.Kubectl(ctx, nil, "create", "namespace", ns)
	require.NoError(t, err)

	t.Run("DryRunEveryManifest", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			b := manifest(t, filepath.Base(f))
			out, err := dryRun(cp, b)
			require.NoError(t, err, "%s", f)
			assert.Equal(t, documents(b), strings.Count(out, "(server dry run)"), "%s: every object read: %s", f, out)
			t.Logf("%s:\n%s", filepath.Base(f), out)
		}
	})
	t.Run("BrokenManifestRejected", func(t *testing.T) { brokenRejected(t, cp) })
	if t.Failed() {
		return
	}
	cp.StartControllerManager(t)
	t.Run("IndexedJob", func(t *testing.T) { indexedJob(t, cp) })
	t.Run("DaemonSetOverNodes", func(t *testing.T) { daemonSet(t, cp) })
}

func dryRun(cp *k8slab.ControlPlane, b []byte) (string, error) {
	return cp.Kubectl(context.Background(), bytes.NewReader(b), "apply", "--server-side", "--dry-run=server",
		"--field-manager=netperfkit-test", "-f", "-")
}

// brokenRejected feeds copies of the manifests each broken in one place and
// expects the apiserver to refuse each, naming what is wrong: a check that
// passes whatever the manifest says would pass these too.
func brokenRejected(t *testing.T, cp *k8slab.ControlPlane) {
	shards, agent := manifest(t, "cachebench-shards.yaml"), manifest(t, "kubernetes.yaml")
	for _, c := range []struct {
		name     string
		in       []byte
		old, new string
		want     string
	}{
		{"completionMode misspelt", shards, "completionMode: Indexed", "completionMode: Indexd", `Unsupported value: "Indexd"`},
		{"unknown field", shards, "backoffLimitPerIndex: 1", "backoffLimitPerIndx: 1", "backoffLimitPerIndx"},
		{"exit code 0 in an In rule", shards, "values: [3]", "values: [0, 3]", "onExitCodes"},
		{"toleration operator", agent, "- operator: Exists", "- operator: Exist", `Unsupported value: "Exist"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, 1, bytes.Count(c.in, []byte(c.old)), "the manifest changed: %q is not there once", c.old)
			out, err := dryRun(cp, bytes.Replace(c.in, []byte(c.old), []byte(c.new), 1))
			require.Error(t, err, "accepted: %s", out)
			assert.Contains(t, err.Error(), c.want)
			t.Logf("rejected as it should be: %v", err)
		})
	}
}

type toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Effect   string `json:"effect"`
}

// pod is what the tests read of a pod.
type pod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		HostNetwork bool   `json:"hostNetwork"`
		DNSPolicy   string `json:"dnsPolicy"`
		Hostname    string `json:"hostname"`
		Affinity    struct {
			NodeAffinity struct {
				Required struct {
					Terms []struct {
						MatchFields []struct {
							Key    string   `json:"key"`
							Values []string `json:"values"`
						} `json:"matchFields"`
					} `json:"nodeSelectorTerms"`
				} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
			} `json:"nodeAffinity"`
		} `json:"affinity"`
		Tolerations []toleration `json:"tolerations"`
		Containers  []struct {
			Name string `json:"name"`
			Env  []struct {
				Name      string `json:"name"`
				ValueFrom *struct {
					FieldRef struct {
						FieldPath string `json:"fieldPath"`
					} `json:"fieldRef"`
				} `json:"valueFrom"`
			} `json:"env"`
			Resources struct {
				Requests map[string]string `json:"requests"`
				Limits   map[string]string `json:"limits"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

func pods(t *testing.T, cp *k8slab.ControlPlane, selector string) []pod {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), nil, "-n", ns, "get", "pods", "-l", selector, "-o", "json")
	require.NoError(t, err)
	var l struct{ Items []pod }
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	return l.Items
}

const indexKey = "batch.kubernetes.io/job-completion-index"

// jobStatus is what the tests read of the Job's status.
type jobStatus struct {
	Active        int    `json:"active"`
	Failed        int    `json:"failed"`
	FailedIndexes string `json:"failedIndexes"`
}

func job(t *testing.T, cp *k8slab.ControlPlane) jobStatus {
	t.Helper()
	out, err := cp.Kubectl(context.Background(), nil, "-n", ns, "get", "job", jobName, "-o", "json")
	require.NoError(t, err)
	var j struct{ Status jobStatus }
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	return j.Status
}

// indexedJob applies the sharded cachebench Job: the Job controller gives
// its 4 pods the indexes 0-3 (annotation, label, JOB_COMPLETION_INDEX, the
// SHARD_INDEX the manifest derives from it); a shard that exits 3 (cachebench
// refused a -start-at already past) fails its index without a retry, by the
// podFailurePolicy, while one that exits 1 is tried again
// (backoffLimitPerIndex).
func indexedJob(t *testing.T, cp *k8slab.ControlPlane) {
	ctx := context.Background()
	_, err := cp.Kubectl(ctx, bytes.NewReader(manifest(t, "cachebench-shards.yaml")), "apply", "--server-side", "-f", "-")
	require.NoError(t, err)
	sel := "batch.kubernetes.io/job-name=" + jobName
	byIndex := func() map[string][]pod {
		m := map[string][]pod{}
		for _, p := range pods(t, cp, sel) {
			m[p.Metadata.Annotations[indexKey]] = append(m[p.Metadata.Annotations[indexKey]], p)
		}
		return m
	}
	require.NoError(t, k8slab.Until(3*time.Minute, time.Second, func() (bool, error) { return len(byIndex()) == 4, nil }),
		"the Job controller did not make 4 indexed pods")
	idx := byIndex()
	for i := range 4 {
		ps := idx[strconv.Itoa(i)]
		require.Len(t, ps, 1, "index %d", i)
		p := ps[0]
		assert.Equal(t, strconv.Itoa(i), p.Metadata.Labels[indexKey], "index %d label", i)
		assert.Equal(t, fmt.Sprintf("%s-%d", jobName, i), p.Spec.Hostname)
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			if e.ValueFrom != nil {
				env[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		// The Job controller's own variable reads the index's label (1.37;
		// older releases the annotation), the manifest's the annotation:
		// both carry the index checked above.
		assert.Contains(t, []string{"metadata.labels['" + indexKey + "']", "metadata.annotations['" + indexKey + "']"},
			env["JOB_COMPLETION_INDEX"], "index %d: the Job controller's env", i)
		assert.Equal(t, "metadata.annotations['"+indexKey+"']", env["SHARD_INDEX"], "index %d: the manifest's -shard I/N", i)
	}

	// The kubelet's part, by hand: index 1 exits 3, index 2 exits 1.
	require.NoError(t, cp.PatchPodStatus(ctx, ns, idx["1"][0].Metadata.Name, "cachebench", 3))
	require.NoError(t, cp.PatchPodStatus(ctx, ns, idx["2"][0].Metadata.Name, "cachebench", 1))
	var st jobStatus
	err = k8slab.Until(2*time.Minute, time.Second, func() (bool, error) {
		st = job(t, cp)
		return st.FailedIndexes == "1" && len(byIndex()["2"]) == 2, nil
	})
	require.NoError(t, err, "job status %+v, pods per index %v", st, counts(byIndex()))
	idx = byIndex()
	assert.Len(t, idx["1"], 1, "exit 3 (-start-at past): the index failed, not retried")
	assert.Len(t, idx["2"], 2, "exit 1: the index tried once more")
	assert.Len(t, idx["0"], 1)
	assert.Len(t, idx["3"], 1)
	t.Logf("job status %+v; pods per index %v", st, counts(idx))
}

func counts(m map[string][]pod) map[string]int {
	c := map[string]int{}
	for k, v := range m {
		c[k] = len(v)
	}
	return c
}

// nodeList is nodes Node objects, a tenth of them tainted NoSchedule, a few
// control-plane nodes and a few NoExecute: the agent tolerates every taint,
// so every node gets its pod.
func nodeList() []byte {
	type taint struct {
		Key    string `json:"key"`
		Value  string `json:"value,omitempty"`
		Effect string `json:"effect"`
	}
	var items []any
	for i := range nodes {
		name := fmt.Sprintf("npk-node-%04d", i)
		var taints []taint
		switch {
		case i < 3:
			taints = []taint{{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"}}
		case i%10 == 0:
			taints = []taint{{Key: "dedicated", Value: "cache", Effect: "NoSchedule"}}
		case i%97 == 0:
			taints = []taint{{Key: "maintenance", Effect: "NoExecute"}}
		}
		items = append(items, map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": name, "labels": map[string]string{
				"kubernetes.io/hostname":      name,
				"topology.kubernetes.io/zone": "zone-" + string(rune('a'+i%3)),
			}},
			"spec": map[string]any{"taints": taints},
		})
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	return b
}

// daemonSet applies the agent's manifest over 1,000 Node objects: one pod
// per node (tainted ones too), on the host network, with the requests and
// the memory-only limit the manifest intends.
func daemonSet(t *testing.T, cp *k8slab.ControlPlane) {
	ctx := context.Background()
	start := time.Now()
	_, err := cp.Kubectl(ctx, bytes.NewReader(nodeList()), "create", "-f", "-", "-o", "name")
	require.NoError(t, err)
	t.Logf("%d nodes created in %v", nodes, time.Since(start).Round(time.Millisecond))
	_, err = cp.Kubectl(ctx, bytes.NewReader(manifest(t, "kubernetes.yaml")), "apply", "--server-side", "-f", "-")
	require.NoError(t, err)
	sel := "app.kubernetes.io/name=netperfkit-agent"
	var ps []pod
	var scheduled string
	err = k8slab.Until(5*time.Minute, 2*time.Second, func() (bool, error) {
		scheduled, err = cp.Kubectl(ctx, nil, "-n", ns, "get", "daemonset", "netperfkit-agent",
			"-o", "jsonpath={.status.currentNumberScheduled}")
		if err != nil || scheduled != strconv.Itoa(nodes) {
			return false, err
		}
		ps = pods(t, cp, sel)
		return len(ps) >= nodes, nil
	})
	require.NoError(t, err, "the DaemonSet scheduled %s of %d nodes; %d pods", scheduled, nodes, len(ps))
	t.Logf("%d agent pods %v after the DaemonSet", len(ps), time.Since(start).Round(time.Millisecond))
	perNode := map[string]int{}
	for _, p := range ps {
		perNode[targetNode(p)]++
		assert.True(t, p.Spec.HostNetwork, p.Metadata.Name)
		assert.Equal(t, "ClusterFirstWithHostNet", p.Spec.DNSPolicy)
		assert.Contains(t, p.Spec.Tolerations, toleration{Operator: "Exists"}, "%s tolerates every taint", p.Metadata.Name)
		require.Len(t, p.Spec.Containers, 1)
		r := p.Spec.Containers[0].Resources
		assert.Equal(t, map[string]string{"cpu": "20m", "memory": "32Mi"}, r.Requests, p.Metadata.Name)
		assert.Equal(t, map[string]string{"memory": "128Mi"}, r.Limits, "%s: no CPU limit (a quota would throttle the servers its peers measure)", p.Metadata.Name)
	}
	assert.Len(t, perNode, nodes, "every node has a pod")
	for n, c := range perNode {
		if c != 1 {
			t.Errorf("node %q has %d agent pods, want 1", n, c)
		}
	}
}

// targetNode is the node a DaemonSet pod is for: the DaemonSet controller
// pins it with a required node affinity on metadata.name.
func targetNode(p pod) string {
	for _, term := range p.Spec.Affinity.NodeAffinity.Required.Terms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
