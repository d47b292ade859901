package latency

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiCall is one call of the exported API with nil, zero, negative or
// out-of-range input. name is the function ("PingPong") or method
// ("Recorder.Record") it exercises; call returns the error it got (nil for
// calls that document a zero result instead); want, when not empty, is a
// word the error must contain: the field or argument at fault.
type apiCall struct {
	name string
	call func(ctx context.Context) error
	want string
}

// unreachable is an address nothing listens on: a closed port on loopback.
const unreachable = "127.0.0.1:1"

func apiCalls(t *testing.T) []apiCall {
	nop := func(context.Context, Request) error { return nil }
	var nilRec *Recorder
	var zeroRec Recorder
	var nilSrv *Server
	var nilCtx context.Context // a nil context is the point
	ready, err := NewServer(nil)
	require.NoError(t, err)
	pingPong := func(addr string, cfg *PingPongConfig) func(context.Context) error {
		return func(ctx context.Context) error { _, err := PingPong(ctx, addr, cfg); return err }
	}
	sched := func(cfg *ScheduleConfig) func(context.Context) error {
		return func(ctx context.Context) error { _, err := Schedule(ctx, cfg); return err }
	}
	newServer := func(cfg *ServerConfig) func(context.Context) error {
		return func(context.Context) error { _, err := NewServer(cfg); return err }
	}
	newRecorder := func(cfg *RecorderConfig) func(context.Context) error {
		return func(context.Context) error { _, err := NewRecorder(cfg); return err }
	}
	return []apiCall{
		// PingPong: bad configurations, a nil context, a missing address
		// and a silent one (bounded by Duration, not a hang).
		{"PingPong", pingPong(unreachable, &PingPongConfig{Duration: -time.Second}), "Duration"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{MPS: -1}), "MPS"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{ReplyEvery: -1}), "ReplyEvery"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{ReadTimeout: -1}), "configuration: ReadTimeout -1ns"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{Spin: -1}), "Spin"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{MinReadTimeout: -1}), "MinReadTimeout"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{MessageSize: -1}), "MessageSize"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{MessageSize: 1 << 30}), "MessageSize"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{Network: "sctp"}), "Network"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{Arrival: 99}), "Arrival"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{Duration: time.Millisecond}), "Duration"},
		{"PingPong", pingPong(unreachable, &PingPongConfig{Recorder: &RecorderConfig{SignificantFigures: 9}}), "SignificantFigures"},
		{"PingPong", pingPong("", nil), "address"},
		{"PingPong", func(context.Context) error {
			_, err := PingPong(nilCtx, unreachable, nil)
			return err
		}, "context"},
		// Schedule
		{"Schedule", sched(nil), "ScheduleConfig"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1}), "Do"},
		{"Schedule", sched(&ScheduleConfig{Do: nop}), "Rate"},
		{"Schedule", sched(&ScheduleConfig{Rate: -5, Do: nop}), "Rate"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1, Workers: -1, Do: nop}), "Workers"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1, Duration: -1, Do: nop}), "Duration"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1, LateAfter: -1, Do: nop}), "LateAfter"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1, Arrival: 7, Do: nop}), "Arrival"},
		{"Schedule", sched(&ScheduleConfig{Rate: 1, Recorder: &RecorderConfig{Lowest: -1}, Do: nop}), "Lowest"},
		{"Schedule", func(context.Context) error {
			_, err := Schedule(nilCtx, &ScheduleConfig{Rate: 1, Do: nop})
			return err
		}, "context"},
		// Constructors
		{"NewRecorder", newRecorder(&RecorderConfig{Lowest: -1}), "Lowest"},
		{"NewRecorder", newRecorder(&RecorderConfig{Highest: -1}), "Highest"},
		{"NewRecorder", newRecorder(&RecorderConfig{SignificantFigures: -1}), "SignificantFigures"},
		{"NewRecorder", newRecorder(&RecorderConfig{SignificantFigures: 6}), "SignificantFigures"},
		{"NewServer", newServer(&ServerConfig{MaxConns: -1}), "MaxConns"},
		{"NewServer", newServer(&ServerConfig{IdleTimeout: -1}), "IdleTimeout"},
		{"NewServer", newServer(&ServerConfig{WriteTimeout: -1}), "WriteTimeout"},
		{"NewServer", newServer(&ServerConfig{MaxMessageSize: 3}), "MaxMessageSize"},
		{"NewServer", newServer(&ServerConfig{MaxMessageSize: -3}), "MaxMessageSize"},
		{"ParseArrival", func(context.Context) error { _, err := ParseArrival("bursty"); return err }, "arrival"},
		// Server: nil arguments, a nil or zero Server, bad networks.
		{"Server.Serve", func(ctx context.Context) error { return ready.Serve(ctx, nil) }, "Listener"},
		{"Server.Serve", func(ctx context.Context) error { return (&Server{}).Serve(ctx, nil) }, "NewServer"},
		{"Server.Serve", func(ctx context.Context) error { return nilSrv.Serve(ctx, nil) }, "NewServer"},
		{"Server.Serve", func(context.Context) error { return ready.Serve(nilCtx, nil) }, "context"},
		{"Server.ServePacket", func(ctx context.Context) error { return ready.ServePacket(ctx, nil) }, "PacketConn"},
		{"Server.ServePacket", func(ctx context.Context) error { return (&Server{}).ServePacket(ctx, nil) }, "NewServer"},
		{"Server.ListenAndServe", func(ctx context.Context) error { return ready.ListenAndServe(ctx, "sctp", "127.0.0.1:0") }, "network"},
		{"Server.ListenAndServe", func(ctx context.Context) error { return ready.ListenAndServe(ctx, "", "") }, "network"},
		{"Server.ListenAndServe", func(ctx context.Context) error { return ready.ListenAndServe(ctx, "udp", "no-port") }, "port"},
		{"Server.ListenAndServe", func(ctx context.Context) error { return nilSrv.ListenAndServe(ctx, "udp", "") }, "NewServer"},
		{"Server.Addr", func(context.Context) error {
			if nilSrv.Addr() != nil || (&Server{}).Addr() != nil || ready.Addr() != nil {
				return assert.AnError
			}
			return nil
		}, ""},
		{"Server.Stats", func(context.Context) error {
			if nilSrv.Stats() != (ServerStats{}) || (&Server{}).Stats() != (ServerStats{}) {
				return assert.AnError
			}
			return nil
		}, ""},
		// Recorder and Worker: nil and zero values.
		{"Recorder.Record", func(context.Context) error { nilRec.Record(time.Second); zeroRec.Record(-time.Second); return nil }, ""},
		{"Recorder.Count", func(context.Context) error { _ = nilRec.Count(); _ = (&Recorder{}).Count(); return nil }, ""},
		{"Recorder.OutOfRange", func(context.Context) error { _ = nilRec.OutOfRange(); _ = (&Recorder{}).OutOfRange(); return nil }, ""},
		{"Recorder.Merge", func(context.Context) error {
			h := hdrhistogram.New(1, 10, 1)
			_ = h.RecordValue(5)
			_ = nilRec.Merge(h)
			_ = (&Recorder{}).Merge(nil)
			_ = (&Recorder{}).Merge(h)
			return nil
		}, ""},
		{"Recorder.Snapshot", func(context.Context) error { _ = nilRec.Snapshot(); _ = (&Recorder{}).Snapshot(); return nil }, ""},
		{"Recorder.Summary", func(context.Context) error {
			_ = nilRec.Summary(0)
			_ = (&Recorder{}).Summary(-1)
			return nil
		}, ""},
		{"Recorder.Worker", func(context.Context) error {
			nilRec.Worker().Record(time.Second)
			(&Recorder{}).Worker().Record(time.Second)
			return nil
		}, ""},
		{"Worker.Record", func(context.Context) error { var w Worker; w.Record(time.Second); return nil }, ""},
		// Pure functions and methods with empty or nil input.
		{"summarizeSamples", func(context.Context) error { _ = summarizeSamples(nil, 0); return nil }, ""},
		{"SummarizeHistogram", func(context.Context) error { _ = SummarizeHistogram(nil, 0); return nil }, ""},
		{"AggregateFunc", func(context.Context) error { _ = AggregateFunc[int, float64]([]int{1, 2}, nil); return nil }, ""},
		{"AggregateFunc[Duration]", func(context.Context) error { _ = AggregateFunc[int, time.Duration]([]int{1, 2}, nil); return nil }, ""},
		{"Range.MarshalJSON", func(context.Context) error { _, err := Range[time.Duration]{}.MarshalJSON(); return err }, ""},
		{"DurationRange.UnmarshalJSON", func(context.Context) error {
			var nilRange *Range[time.Duration]
			return nilRange.UnmarshalJSON([]byte(`{}`))
		}, "Range"},
		{"DurationRange.UnmarshalJSON", func(context.Context) error { return new(Range[float64]).UnmarshalJSON([]byte(`{`)) }, "latency"},
		{"Arrival.String", func(context.Context) error { _ = Arrival(-3).String(); return nil }, ""},
		{"Summary.WriteText", func(context.Context) error { return Summary{}.WriteText(nil, "") }, "Writer"},
		{"Summary.MarshalJSON", func(context.Context) error { _, err := Summary{}.MarshalJSON(); return err }, ""},
		{"Summary.UnmarshalJSON", func(context.Context) error { return new(Summary).UnmarshalJSON([]byte("{")) }, "summary"},
		{"PingPongResult.MarshalJSON", func(context.Context) error { _, err := PingPongResult{}.MarshalJSON(); return err }, ""},
		{"PingPongResult.UnmarshalJSON", func(context.Context) error { return new(PingPongResult).UnmarshalJSON([]byte(`{"p50_us":"x"}`)) }, "ping-pong"},
		{"PingPongResult.UnmarshalJSON", func(context.Context) error {
			var nilRes *PingPongResult
			return nilRes.UnmarshalJSON([]byte(`{}`))
		}, "nil pointer"},
		{"Summary.UnmarshalJSON", func(context.Context) error { var nilSum *Summary; return nilSum.UnmarshalJSON([]byte(`{}`)) }, "nil pointer"},
	}
}

// TestAPIMisuse calls every exported function and method with nil, zero,
// negative or out-of-range input: none may panic or hang (each returns
// within a second), and an error names the field or argument at fault.
func TestAPIMisuse(t *testing.T) {
	calls := apiCalls(t)
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			type outcome struct {
				err   error
				panic any
			}
			done := make(chan outcome, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- outcome{panic: p}
					}
				}()
				done <- outcome{err: c.call(ctx)}
			}()
			select {
			case o := <-done:
				require.Nil(t, o.panic, "panicked")
				if c.want == "" {
					assert.NoError(t, o.err)
					return
				}
				require.Error(t, o.err)
				assert.Contains(t, o.err.Error(), c.want)
				assert.True(t, strings.HasPrefix(o.err.Error(), "latency: "), "%q starts with the package name", o.err)
			case <-time.After(time.Second):
				t.Fatal("did not return within 1 s")
			}
		})
	}
}

// TestAPIMisuseCoversEveryExport fails when an exported function or method
// has no entry in apiCalls, so that a new one cannot skip the walk.
func TestAPIMisuseCoversEveryExport(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range apiCalls(t) {
		covered[c.name] = true
	}
	var missing []string
	for _, name := range exportedFuncs(t, ".") {
		if !covered[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "exported functions and methods without a misuse call")
}

// exportedFuncs lists the exported functions and methods (as Type.Method)
// declared in the package's non-test files in dir.
func exportedFuncs(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		af, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				typ := fd.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				id, ok := typ.(*ast.Ident)
				if !ok || !id.IsExported() {
					continue
				}
				name = id.Name + "." + name
			}
			out = append(out, name)
		}
	}
	return out
}

// A zero Recorder is the default one: it records, counts and summarises.
func TestZeroRecorder(t *testing.T) {
	var r Recorder
	r.Record(10 * time.Microsecond)
	r.Worker().Record(20 * time.Microsecond)
	r.Record(2 * time.Minute) // above the default 60 s
	assert.Equal(t, int64(3), r.Count())
	assert.Equal(t, int64(1), r.OutOfRange())
	assert.Equal(t, RecorderConfig{Lowest: time.Nanosecond, Highest: time.Minute, SignificantFigures: 3}, r.config())
	s := r.Summary(0)
	assert.Equal(t, int64(3), s.Observations)
	assert.InEpsilon(t, float64(10*time.Microsecond), float64(s.Min), 1e-3)
	var nilRec *Recorder
	assert.Zero(t, nilRec.Count())
	assert.Zero(t, nilRec.Snapshot().TotalCount())
	assert.Nil(t, nilRec.Worker())
}

// Addr is nil before a Server serves and the bound address after; Serve
// returns ctx.Err() when ctx ends.
func TestServerAddr(t *testing.T) {
	s, err := NewServer(nil)
	require.NoError(t, err)
	assert.Nil(t, s.Addr())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	require.Eventually(t, func() bool { return s.Addr() != nil }, 5*time.Second, time.Millisecond)
	assert.Equal(t, ln.Addr().String(), s.Addr().String())
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

// Errors name the field the caller set, in its own unit: a negative
// ReadTimeout is reported as ReadTimeout, not as the MinReadTimeout derived
// from it, and durations print as durations ("-1s", not -1000000000).
func TestConfigErrorsNameTheFieldInItsUnit(t *testing.T) {
	nop := func(context.Context, Request) error { return nil }
	for want, call := range map[string]func() error{
		": ReadTimeout -1s is negative": func() error {
			_, err := PingPong(context.Background(), unreachable, &PingPongConfig{ReadTimeout: -time.Second})
			return err
		},
		": MinReadTimeout -2ms is negative": func() error {
			_, err := PingPong(context.Background(), unreachable, &PingPongConfig{MinReadTimeout: -2 * time.Millisecond})
			return err
		},
		": Duration -1.5s is negative": func() error {
			_, err := PingPong(context.Background(), unreachable, &PingPongConfig{Duration: -1500 * time.Millisecond})
			return err
		},
		": Spin -1µs is negative": func() error {
			_, err := PingPong(context.Background(), unreachable, &PingPongConfig{Spin: -time.Microsecond})
			return err
		},
		": MessageSize -5 is negative": func() error {
			_, err := PingPong(context.Background(), unreachable, &PingPongConfig{MessageSize: -5})
			return err
		},
		": IdleTimeout -30s is negative": func() error { _, err := NewServer(&ServerConfig{IdleTimeout: -30 * time.Second}); return err },
		": WriteTimeout -5s is negative": func() error { _, err := NewServer(&ServerConfig{WriteTimeout: -5 * time.Second}); return err },
		": MaxConns -1 is negative":      func() error { _, err := NewServer(&ServerConfig{MaxConns: -1}); return err },
		": Duration -1s is negative": func() error {
			_, err := Schedule(context.Background(), &ScheduleConfig{Rate: 1, Duration: -time.Second, Do: nop})
			return err
		},
		": LateAfter -1ms is negative": func() error {
			_, err := Schedule(context.Background(), &ScheduleConfig{Rate: 1, LateAfter: -time.Millisecond, Do: nop})
			return err
		},
		": Lowest -1ns is negative": func() error { _, err := NewRecorder(&RecorderConfig{Lowest: -1}); return err },
	} {
		err := call()
		require.ErrorIs(t, err, ErrInvalidConfig, want)
		assert.Contains(t, err.Error(), want)
	}
	_, err := PingPong(context.Background(), unreachable, &PingPongConfig{ReadTimeout: -time.Second})
	assert.NotContains(t, err.Error(), "MinReadTimeout")
	assert.NotContains(t, err.Error(), "1000000000")
}

// readResult reads every field and calls every method of a result, as a
// caller that prints it after logging the error would.
func readPingPong(t *testing.T, r *PingPongResult) {
	t.Helper()
	require.NotNil(t, r)
	_ = r.P50 + r.P99 + r.RunTime + r.ValidTime
	_ = r.Sent + r.Received + r.Dropped
	_, err := r.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, r.WriteText(io.Discard, "x"))
	_ = r.Recorder.Summary(0)
}

// refusedTCP is a loopback TCP address that refuses connections.
func refusedTCP(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// PingPong's result is never nil, whatever the error, and can be read
// (docs/conventions.md, "Results after an error: never nil").
func TestPingPongResultNeverNil(t *testing.T) {
	var nilCtx context.Context // a nil context is the point
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() (*PingPongResult, error){
		"invalid config": func() (*PingPongResult, error) {
			return PingPong(context.Background(), unreachable, &PingPongConfig{ReadTimeout: -1})
		},
		"bad recorder": func() (*PingPongResult, error) {
			return PingPong(context.Background(), unreachable, &PingPongConfig{Recorder: &RecorderConfig{Lowest: -1}})
		},
		"nil context": func() (*PingPongResult, error) { return PingPong(nilCtx, unreachable, nil) },
		"refused": func() (*PingPongResult, error) {
			return PingPong(context.Background(), refusedTCP(t), &PingPongConfig{Network: "tcp", Count: 3})
		},
		"bad address": func() (*PingPongResult, error) { return PingPong(context.Background(), "no-port", nil) },
		"cancelled": func() (*PingPongResult, error) {
			return PingPong(cancelled, silentPeer(t, "udp"), &PingPongConfig{Count: 3})
		},
		"no reply": func() (*PingPongResult, error) {
			return PingPong(context.Background(), silentPeer(t, "udp"), &PingPongConfig{Count: 2, ReadTimeout: 20 * time.Millisecond})
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := call()
			require.Error(t, err)
			readPingPong(t, r)
		})
	}
}

// A ping-pong that got no reply at all is an error (ErrNoReply), beside a
// result that counts what was sent and dropped: in ping-pong and under
// load.
func TestPingPongNoReply(t *testing.T) {
	addr := silentPeer(t, "udp")
	r, err := PingPong(context.Background(), addr, &PingPongConfig{Count: 3, ReadTimeout: 20 * time.Millisecond})
	require.ErrorIs(t, err, ErrNoReply)
	assert.Contains(t, err.Error(), addr)
	readPingPong(t, r)
	assert.Equal(t, int64(3), r.Sent)
	assert.Zero(t, r.Received)
	assert.Equal(t, int64(3), r.Dropped)
	assert.Zero(t, r.Observations)

	r, err = PingPong(context.Background(), addr, &PingPongConfig{MPS: 200, ReplyEvery: 1, Duration: 300 * time.Millisecond,
		WarmUp: -1, CoolDown: -1, ReadTimeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrNoReply)
	readPingPong(t, r)
	assert.Positive(t, r.Sent)
	assert.Zero(t, r.Received)
	assert.Positive(t, r.Dropped)

	// Under load with no message asking for a reply, none is missing.
	r, err = PingPong(context.Background(), addr, &PingPongConfig{MPS: 10, ReplyEvery: 1000, Duration: 200 * time.Millisecond,
		WarmUp: -1, CoolDown: -1, ReadTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	assert.Positive(t, r.Sent)
	assert.Zero(t, r.Dropped)
}

// Schedule's result is never nil, whatever the error.
func TestScheduleResultNeverNil(t *testing.T) {
	var nilCtx context.Context // a nil context is the point
	nop := func(context.Context, Request) error { return nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() (*ScheduleResult, error){
		"nil config":  func() (*ScheduleResult, error) { return Schedule(context.Background(), nil) },
		"nil context": func() (*ScheduleResult, error) { return Schedule(nilCtx, &ScheduleConfig{Rate: 1, Do: nop}) },
		"bad recorder": func() (*ScheduleResult, error) {
			return Schedule(context.Background(), &ScheduleConfig{Rate: 1, Do: nop, Recorder: &RecorderConfig{Lowest: -1}})
		},
		"cancelled": func() (*ScheduleResult, error) { return Schedule(cancelled, &ScheduleConfig{Rate: 100, Do: nop}) },
	} {
		t.Run(name, func(t *testing.T) {
			r, err := call()
			require.Error(t, err)
			require.NotNil(t, r)
			_ = r.Response.P99 + r.Service.P50 + r.ClientLateness.P99
			_ = r.Started + r.Due + r.Failed
			_, err = json.Marshal(r)
			require.NoError(t, err)
		})
	}
}
