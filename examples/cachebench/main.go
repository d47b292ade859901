// Command cachebench runs field experiment E3's workload against a Valkey or
// Redis endpoint: GET/SET with a number of workers for a duration, in pool mode
// (each worker reuses one client) and connect mode (a new client per
// operation), repeated, reporting per engine and mode the median over runs of
// p50, p99 and ops/s with min-max ranges, and attempts and errors summed.
//
// Usage:
//
//	cachebench [connection flags as cacheprobe] [-engine glide|resp|both]
//	           [-mode pool|connect|both] [-workers 4] [-d 20s] [-runs 3]
//	           [-ratio 1:1] [-json]
//
// With -engine both, each mode also reports glide relative to resp on the same
// endpoint: the client library's own overhead. Without -addr a local server
// is started.
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
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/localcache"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type output struct {
	Endpoint    string             `json:"endpoint"`
	Workers     int                `json:"workers"`
	DurationSec float64            `json:"duration_sec"`
	Runs        int                `json:"runs"`
	Ratio       string             `json:"ratio"`
	Results     []*cache.Aggregate `json:"results"`
	Comparisons []cache.Comparison `json:"comparisons,omitempty"`
}

func choices(v, both string, all ...string) ([]string, error) {
	if v == both {
		return all, nil
	}
	for _, a := range all {
		if v == a {
			return []string{v}, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of %v or %q", v, all, both)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cachebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := cache.NewEndpointFlags(fs)
	engineFlag := fs.String("engine", "glide", "client engine: glide, resp or both")
	modeFlag := fs.String("mode", "both", "pool, connect or both")
	workers := fs.Int("workers", 4, "concurrent workers")
	dur := fs.Duration("d", 20*time.Second, "duration of each run")
	runs := fs.Int("runs", 3, "runs per engine and mode (medians are reported)")
	ratio := fs.String("ratio", "1:1", "GET:SET ratio")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "cachebench:", err)
		return code
	}
	engines, err := choices(*engineFlag, "both", string(cache.EngineGlide), string(cache.EngineResp))
	if err != nil {
		return fail(2, fmt.Errorf("-engine: %w", err))
	}
	modes, err := choices(*modeFlag, "both", string(cache.ModePool), string(cache.ModeConnect))
	if err != nil {
		return fail(2, fmt.Errorf("-mode: %w", err))
	}
	get, set, err := cache.ParseRatio(*ratio)
	if err != nil {
		return fail(2, err)
	}
	ep, err := ef.Endpoint()
	if err != nil {
		return fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ep.Addr == "" {
		srv, err := localcache.Start(ctx, ef, ep)
		if err != nil {
			return fail(2, err)
		}
		defer srv.Close()
		fmt.Fprintf(stderr, "cachebench: started local %s on %s\n", srv.Binary, srv.Addr)
	}

	out := output{Endpoint: ep.String(), Workers: *workers, DurationSec: dur.Seconds(), Runs: *runs, Ratio: *ratio}
	byKey := map[string]*cache.Aggregate{}
	for _, mode := range modes {
		for _, engine := range engines {
			cfg := &cache.WorkloadConfig{
				Engine: cache.Engine(engine), Mode: cache.Mode(mode), Workers: *workers, Duration: *dur,
				GetWeight: get, SetWeight: set,
			}
			agg, err := cache.RunRepeated(ctx, ep, cfg, *runs, func(r *cache.RunResult) {
				fmt.Fprintf(stderr, "cachebench: %s %s: %.0f ops/s, p50 %.0f us, p99 %.0f us, %d attempts, %d errors\n",
					r.Engine, r.Mode, r.OpsPerSec, r.P50Us, r.P99Us, r.Attempts, r.Errors)
			})
			if err != nil {
				return fail(1, fmt.Errorf("%s %s: %w", engine, mode, err))
			}
			out.Results = append(out.Results, agg)
			byKey[engine+"/"+mode] = agg
		}
		if g, r := byKey["glide/"+mode], byKey["resp/"+mode]; g != nil && r != nil {
			out.Comparisons = append(out.Comparisons, cache.Compare("resp "+mode, r, "glide "+mode, g))
		}
	}
	for _, engine := range engines {
		if p, c := byKey[engine+"/pool"], byKey[engine+"/connect"]; p != nil && c != nil {
			out.Comparisons = append(out.Comparisons, cache.Compare(engine+" pool", p, engine+" connect", c))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(1, err)
		}
	} else {
		printTables(stdout, &out)
	}
	for _, a := range out.Results {
		if a.Errors > 0 {
			kinds := make([]string, 0, len(a.ErrorsByKind))
			for k, n := range a.ErrorsByKind {
				kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
			}
			sort.Strings(kinds)
			fmt.Fprintf(stderr, "cachebench: %s %s errors: %v\n", a.Engine, a.Mode, kinds)
		}
	}
	return 0
}

func printTables(w io.Writer, o *output) {
	fmt.Fprintf(w, "endpoint %s, %d workers, %s per run, %d runs, GET:SET %s\n\n",
		o.Endpoint, o.Workers, time.Duration(o.DurationSec*float64(time.Second)), o.Runs, o.Ratio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tmode\tp50 us\t(min-max)\tp99 us\t(min-max)\tops/s\t(min-max)\tattempts\terrors\t")
	for _, a := range o.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t(%.0f-%.0f)\t%.0f\t(%.0f-%.0f)\t%.0f\t(%.0f-%.0f)\t%d\t%d\t\n",
			a.Engine, a.Mode, a.P50Us, a.P50UsRange[0], a.P50UsRange[1], a.P99Us, a.P99UsRange[0], a.P99UsRange[1],
			a.OpsPerSec, a.OpsPerSecRange[0], a.OpsPerSecRange[1], a.Attempts, a.Errors)
	}
	tw.Flush()
	if len(o.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "other vs base\tp50 ratio\tp99 ratio\tops/s ratio\tp50 delta us\tp99 delta us\t")
	for _, c := range o.Comparisons {
		fmt.Fprintf(tw, "%s vs %s\t%.2fx\t%.2fx\t%.2fx\t%+.0f\t%+.0f\t\n", c.Other, c.Base, c.P50Ratio, c.P99Ratio, c.OpsPerSecRatio, c.P50DeltaUs, c.P99DeltaUs)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n(glide vs resp on the same endpoint and mode is the client library's own overhead)")
}
