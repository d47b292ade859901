package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const deployDir = "../../deploy"

// k8sObject is the part of a Kubernetes object the test reads.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string
	Metadata   struct {
		Name, Namespace string
		Labels          map[string]string
	}
	Data       map[string]string
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector  yaml.Node
		ClusterIP string `yaml:"clusterIP"`
		Ports     []struct {
			Name       string
			Port       int
			TargetPort string `yaml:"targetPort"`
			Protocol   string
		}
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				HostNetwork                   bool `yaml:"hostNetwork"`
				TerminationGracePeriodSeconds int  `yaml:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Name  string
					Args  []string
					Ports []struct {
						Name          string
						ContainerPort int `yaml:"containerPort"`
						Protocol      string
					}
					VolumeMounts []struct {
						Name      string
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				}
				Volumes []struct {
					Name      string
					ConfigMap struct{ Name string } `yaml:"configMap"`
				}
			}
		}
	}
}

func readK8s(t *testing.T) map[string]k8sObject {
	t.Helper()
	f, err := os.Open(filepath.Join(deployDir, "kubernetes.yaml"))
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	objs := map[string]k8sObject{}
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.NotEmpty(t, o.APIVersion)
		objs[o.Kind] = o
	}
	return objs
}

func TestDeployKubernetes(t *testing.T) {
	objs := readK8s(t)
	require.Contains(t, objs, "DaemonSet")
	require.Contains(t, objs, "Service")
	require.Contains(t, objs, "ConfigMap")
	ds, svc, cm := objs["DaemonSet"], objs["Service"], objs["ConfigMap"]
	assert.Equal(t, "apps/v1", ds.APIVersion)
	assert.Equal(t, ds.Metadata.Namespace, svc.Metadata.Namespace)

	pod := ds.Spec.Template.Spec
	assert.True(t, pod.HostNetwork, "the agent measures the node's own NIC")
	assert.LessOrEqual(t, pod.TerminationGracePeriodSeconds, 10)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	// The container's arguments are valid agent flags, and the ports it
	// declares are the ones they set.
	args := withTestWebConfig(t, objs, c.Args)
	cfg, err := parseConfig(args, io.Discard)
	require.NoError(t, err, "args %q", args)
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, cfg.IperfPort, ports["iperf3"])
	assert.Equal(t, cfg.IperfPort, ports["iperf3-udp"])
	assert.Equal(t, cfg.SockperfPort, ports["sockperf"])
	assert.Equal(t, cfg.SockperfPort, ports["sockperf-tcp"])
	metricsAddr, err := cfg.metricsAddr()
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(metricsAddr, ":9469"))
	assert.Equal(t, 9469, ports["metrics"])

	// The peers file comes from the ConfigMap.
	require.Len(t, c.VolumeMounts, 3, "the ConfigMap, the web configuration and the TLS Secret")
	require.Len(t, pod.Volumes, 3)
	assert.Equal(t, "config", pod.Volumes[0].Name)
	assert.Equal(t, cm.Metadata.Name, pod.Volumes[0].ConfigMap.Name)
	assert.Equal(t, filepath.Join(c.VolumeMounts[0].MountPath, "peers"), cfg.PeersFile)
	entries, err := readPeersFile(strings.NewReader(cm.Data["peers"]))
	require.NoError(t, err)
	_, err = parsePeers(entries, cfg.IperfPort, cfg.SockperfPort)
	require.NoError(t, err)

	// The Service selects the DaemonSet's pods and exposes the metrics port.
	var sel map[string]string
	require.NoError(t, svc.Spec.Selector.Decode(&sel))
	for k, v := range sel {
		assert.Equal(t, v, ds.Spec.Template.Metadata.Labels[k], k)
	}
	assert.Equal(t, "None", svc.Spec.ClusterIP)
	require.Len(t, svc.Spec.Ports, 2)
	assert.Equal(t, 9469, svc.Spec.Ports[0].Port)
	assert.Equal(t, "metrics", svc.Spec.Ports[0].TargetPort)

	// The agents find each other through the Service's sockperf SRV
	// records (issue 33): kubectl apply is the whole set-up.
	sp := svc.Spec.Ports[1]
	assert.Equal(t, "sockperf", sp.TargetPort)
	assert.Equal(t, "UDP", sp.Protocol)
	assert.Equal(t, cfg.SockperfPort, sp.Port)
	assert.Equal(t, "_"+sp.Name+"._udp."+svc.Metadata.Name+"."+svc.Metadata.Namespace+".svc.cluster.local", cfg.PeersDNS)
	assert.Equal(t, meshAuto, cfg.Mesh)
}

// readUnit parses a systemd unit file into section -> key -> values.
func readUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			require.True(t, strings.HasSuffix(line, "]"), "line %d: %q", n, line)
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "line %d: %q is not key=value", n, line)
			require.NotEmpty(t, section, "line %d outside a section", n)
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestDeploySystemd(t *testing.T) {
	u := readUnit(t, filepath.Join(deployDir, "netperfkit-agent.service"))
	require.Contains(t, u, "Unit")
	require.Contains(t, u, "Service")
	require.Contains(t, u, "Install")
	s := u["Service"]
	require.Len(t, s["ExecStart"], 1)
	args := strings.Fields(s["ExecStart"][0])
	assert.True(t, filepath.IsAbs(args[0]))
	// The unit's command line is a valid one, with the example settings
	// standing in for /etc/netperfkit/agent.json.
	for i, a := range args {
		if a == "-config" {
			assert.Equal(t, "/etc/netperfkit/agent.json", args[i+1])
			args[i+1] = filepath.Join(deployDir, "agent.json")
		}
	}
	cfg, err := parseConfig(args[1:], io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "/etc/netperfkit/peers", cfg.PeersFile)
	assert.Equal(t, []string{"/bin/kill -HUP $MAINPID"}, s["ExecReload"], "reload re-reads the peers")
	assert.Equal(t, []string{"SIGTERM"}, s["KillSignal"])
	assert.Equal(t, []string{"yes"}, s["DynamicUser"])
	assert.Equal(t, []string{"multi-user.target"}, u["Install"]["WantedBy"])
	assert.Contains(t, u["Unit"]["After"], "network-online.target")
}

func TestDeployExampleConfigIsValid(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "agent.json"))
	require.NoError(t, err)
	c := defaults()
	require.NoError(t, decodeConfig(b, &c))
	require.NoError(t, c.validate())
}

// TestDeployIPv6Node runs the DaemonSet's arguments with an IPv6 node
// address in $(NODE_IP), as Kubernetes expands it: every address the agent
// binds must parse.
func TestDeployIPv6Node(t *testing.T) {
	objs := readK8s(t)
	c := objs["DaemonSet"].Spec.Template.Spec.Containers[0]
	for _, ip := range []string{"10.0.1.10", "fd00:10::7"} {
		args := make([]string, len(c.Args))
		for i, a := range withTestWebConfig(t, objs, c.Args) {
			args[i] = strings.ReplaceAll(a, "$(NODE_IP)", ip)
		}
		cfg, err := parseConfig(args, io.Discard)
		require.NoError(t, err, "node %s: args %q", ip, args)
		addr, err := cfg.metricsAddr()
		require.NoError(t, err)
		host, port, err := net.SplitHostPort(addr)
		require.NoError(t, err, "node %s: -metrics %q", ip, addr)
		assert.Equal(t, ip, host)
		assert.Equal(t, "9469", port)
	}
}

// TestDeployNoCPUCap: a CPU quota throttles the servers peers measure.
func TestDeployNoCPUCap(t *testing.T) {
	u := readUnit(t, filepath.Join(deployDir, "netperfkit-agent.service"))
	s := u["Service"]
	assert.NotContains(t, s, "CPUQuota", "a CFS quota distorts what peers measure")
	assert.NotEmpty(t, s["MemoryMax"], "memory stays capped")
	b, err := os.ReadFile(filepath.Join(deployDir, "kubernetes.yaml"))
	require.NoError(t, err)
	var limits struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Resources struct {
							Limits map[string]string
						}
					}
				}
			}
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		err := dec.Decode(&limits)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, c := range limits.Spec.Template.Spec.Containers {
			assert.NotContains(t, c.Resources.Limits, "cpu")
		}
	}
}

// TestDeployExampleConfigRestrictsAccess: the example settings bind the
// servers and /metrics to one address and serve private networks only.
func TestDeployExampleConfigRestrictsAccess(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "agent.json"))
	require.NoError(t, err)
	c := defaults()
	require.NoError(t, decodeConfig(b, &c))
	require.NotEmpty(t, c.Listen)
	require.NotEmpty(t, c.AllowClients)
	for _, s := range c.AllowClients {
		p, err := netip.ParsePrefix(s)
		require.NoError(t, err, s)
		assert.True(t, p.Addr().IsPrivate(), "%s is a private range", s)
	}
	addr, err := c.metricsAddr()
	require.NoError(t, err)
	host, _, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, c.Listen, host, "/metrics on the listen address, not every interface")
	unit, err := os.ReadFile(filepath.Join(deployDir, "netperfkit-agent.service"))
	require.NoError(t, err)
	assert.Contains(t, string(unit), "allow_clients")
}
