// Command cacheprobe times the phases of fresh connections to a Valkey or Redis
// endpoint (DNS, TCP connect, TLS handshake, AUTH, CLUSTER SLOTS, the first
// GET, close), as field experiment E3's probe did, and prints the medians.
//
// Usage:
//
//	cacheprobe [-addr host:port] [-cluster] [-tls] [-cacert FILE] [-insecure]
//	           [-user NAME] [-password PW] [-iam-cache NAME -iam-region R [-serverless]]
//	           [-n 200] [-json]
//
// The password can also come from $NETPERFKIT_CACHE_PASSWORD. Without -addr a
// local redis-server (or valkey-server) is started with the requested TLS,
// user and cluster options, and stopped at exit.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"text/tabwriter"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/examples/internal/localcache"
	"github.com/netperfkit/netperfkit/latency"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// output is the -json object.
type output struct {
	Endpoint      string                     `json:"endpoint"`
	Probes        int                        `json:"probes"`
	Succeeded     int                        `json:"succeeded"`
	Errors        int                        `json:"errors"`
	ErrorsByKind  map[cache.ErrorKind]int    `json:"errors_by_kind"`
	ErrorExamples map[cache.ErrorKind]string `json:"error_examples,omitempty"`
	TLSVersion    string                     `json:"tls_version,omitempty"`
	// Causes is what the probes' set-ups waited on (Summary's, repeated
	// at the top for scripts).
	Causes cache.Causes `json:"causes"`
	cachecli.PhaseMedians
	Summary *cache.ProbeSummary `json:"summary"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cacheprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := cachecli.NewEndpointFlags(fs, "")
	n := fs.Int("n", 200, "number of probes (fresh connections)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ep, err := ef.Endpoint()
	if err != nil {
		fmt.Fprintln(stderr, "cacheprobe:", err)
		return 2
	}
	if ep.Addr == "" {
		srv, err := localcache.Start(ctx, ef, ep)
		if err != nil {
			fmt.Fprintln(stderr, "cacheprobe:", err)
			return 2
		}
		defer srv.Close()
		fmt.Fprintf(stderr, "cacheprobe: started local %s on %s\n", srv.Binary, srv.Addr)
	}
	p, err := cache.NewProber(ep)
	if err != nil {
		fmt.Fprintln(stderr, "cacheprobe:", err)
		return 2
	}
	sum, err := p.Run(ctx, &cache.ProbeConfig{Probes: *n})
	if err != nil {
		fmt.Fprintln(stderr, "cacheprobe:", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(output{
			Endpoint: ep.String(), Probes: sum.Probes, Succeeded: sum.Succeeded, Errors: sum.Probes - sum.Succeeded,
			ErrorsByKind: sum.ErrorsByKind, ErrorExamples: sum.ErrorExamples, TLSVersion: sum.TLSVersion, Causes: sum.Causes,
			PhaseMedians: cachecli.Medians(sum), Summary: sum,
		}); err != nil {
			fmt.Fprintln(stderr, "cacheprobe:", err)
			return 1
		}
	} else {
		printTable(stdout, ep, sum)
	}
	if sum.Succeeded < sum.Probes {
		printErrors(stderr, sum)
	}
	if sum.Succeeded == 0 {
		return 1
	}
	return 0
}

func printTable(w io.Writer, ep *cache.Endpoint, s *cache.ProbeSummary) {
	fmt.Fprintf(w, "endpoint %s\n", ep)
	fmt.Fprintf(w, "probes %d, succeeded %d, errors %d", s.Probes, s.Succeeded, s.Probes-s.Succeeded)
	if s.TLSVersion != "" {
		fmt.Fprintf(w, ", %s", s.TLSVersion)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	m := cachecli.Medians(s)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "median (us)\tDNS\tTCP\tTLS\tAUTH\tCLUSTER SLOTS\tGET\ttotal\t")
	fmt.Fprintf(tw, "\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", m.DNSUs, m.TCPUs, m.TLSUs, m.AuthUs, m.ClusterSlotsUs, m.GetUs, m.TotalUs)
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase (us)\tn\tp50\tp90\tp99\tmax\t")
	for _, row := range []struct {
		name string
		s    latency.Summary
	}{
		{"DNS", s.Phases[cache.PhaseDNS]}, {"TCP", s.Phases[cache.PhaseConnect]}, {"TLS", s.Phases[cache.PhaseTLS]},
		{"AUTH", s.Phases[cache.PhaseAuth]}, {"CLUSTER SLOTS", s.Phases[cache.PhaseClusterSlots]},
		{"GET", s.Phases[cache.PhaseCommand]}, {"close", s.Phases[cache.PhaseClose]}, {"total", s.Total},
	} {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t\n", row.name, row.s.Observations, float64(row.s.P50)/1e3, float64(row.s.P90)/1e3, float64(row.s.P99)/1e3, float64(row.s.Max)/1e3)
	}
	tw.Flush()
	printCauses(w, s.Causes)
}

// printCauses says what the set-ups waited on, and where it was counted.
func printCauses(w io.Writer, c cache.Causes) {
	fmt.Fprintf(w, "\nwaited on: %s\n", cachecli.CausesText(c))
	if c.From != "" {
		fmt.Fprintf(w, "(counted from %s)\n", c.From)
	}
}

func printErrors(w io.Writer, s *cache.ProbeSummary) {
	kinds := make([]string, 0, len(s.ErrorsByKind))
	for k := range s.ErrorsByKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "cacheprobe: %d probes failed with %s: %s\n", s.ErrorsByKind[cache.ErrorKind(k)], k, s.ErrorExamples[cache.ErrorKind(k)])
	}
}
