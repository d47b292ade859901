package cachetest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/internal/resp"
)

// clusterPrimaries is the number of primaries of a Config.Cluster server.
const clusterPrimaries = 3

// addReplicas makes node 3+i a replica of primary i: CLUSTER MEET, then
// CLUSTER REPLICATE once gossip has told the new node the primary's ID,
// then waits until every replica's link is up and every node sees the
// cluster ok.
func (s *Server) addReplicas(ctx context.Context) error {
	replicas := s.Addrs[clusterPrimaries:]
	for i, r := range replicas {
		id, err := s.Do(ctx, s.Addrs[i], "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		host, port, _ := net.SplitHostPort(s.Addrs[i])
		if _, err := s.Do(ctx, r, "CLUSTER", "MEET", host, port); err != nil {
			return err
		}
		// REPLICATE fails with "Unknown node" until the MEET handshake has
		// completed and the primary's ID is known.
		if err := s.poll(ctx, r, func() error {
			_, err := s.Do(ctx, r, "CLUSTER", "REPLICATE", id)
			return err
		}); err != nil {
			return err
		}
	}
	for _, r := range replicas {
		if err := s.poll(ctx, r, func() error { return s.expect(ctx, r, "master_link_status:up", "INFO", "REPLICATION") }); err != nil {
			return err
		}
	}
	for _, a := range s.Addrs {
		if err := s.poll(ctx, a, func() error { return s.expect(ctx, a, "cluster_state:ok", "CLUSTER", "INFO") }); err != nil {
			return err
		}
	}
	return nil
}

// expect runs a command on addr and fails unless its reply contains want.
func (s *Server) expect(ctx context.Context, addr, want string, args ...string) error {
	out, err := s.Do(ctx, addr, args...)
	if err != nil {
		return err
	}
	if !strings.Contains(out, want) {
		return fmt.Errorf("cachetest: %s on %s: no %q yet", strings.Join(args, " "), addr, want)
	}
	return nil
}

// poll calls f every 20 ms until it succeeds or ctx ends.
func (s *Server) poll(ctx context.Context, addr string, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cachetest: cluster node %s: %w: %w", addr, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// doTimeout bounds one Do call when ctx has no earlier deadline.
const doTimeout = 2 * time.Second

// Do runs one command on the node at addr (one of Addrs) over a connection
// of its own, with the server's TLS and ACL user, and returns the reply as
// text: a string or number as it is, an array one element a line (nested
// arrays flattened), nil as "". An error reply is returned as an error
// holding its text. It takes at most 2 s, less when ctx ends sooner: a
// stopped node (Pause) makes it time out. Tests and tools use it to read
// CLUSTER NODES, INFO or CLIENT LIST and to send CLUSTER FAILOVER.
func (s *Server) Do(ctx context.Context, addr string, args ...string) (string, error) {
	if ctx == nil {
		return "", errors.New("cachetest: nil context")
	}
	if len(args) == 0 {
		return "", errors.New("cachetest: Do needs a command")
	}
	ctx, cancel := context.WithTimeout(ctx, doTimeout)
	defer cancel()
	d := net.Dialer{}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("cachetest: %w", err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if s.tls {
		tc := tls.Client(nc, s.clientTLSConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return "", fmt.Errorf("cachetest: %s: %w", addr, err)
		}
		nc = tc
	}
	var req []byte
	if s.user != "" {
		req = resp.AppendCommand(req, "AUTH", s.user, s.password)
	}
	req = resp.AppendCommand(req, args...)
	if _, err := nc.Write(req); err != nil {
		return "", fmt.Errorf("cachetest: %s: %w", addr, ctxErr(ctx, err))
	}
	rd := resp.NewReader(bufio.NewReader(nc), resp.DefaultLimits)
	if s.user != "" {
		if v, err := rd.Read(); err != nil || v.IsError() {
			return "", fmt.Errorf("cachetest: %s: AUTH: %w", addr, replyErr(v, ctxErr(ctx, err)))
		}
	}
	v, err := rd.Read()
	if err != nil || v.IsError() {
		return "", fmt.Errorf("cachetest: %s %s: %w", addr, args[0], replyErr(v, ctxErr(ctx, err)))
	}
	var b strings.Builder
	flatten(&b, v)
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// ctxErr prefers ctx's error to the closed connection it caused.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func replyErr(v resp.Value, err error) error {
	if err != nil {
		return err
	}
	return errors.New(v.Text())
}

// flatten writes v's strings and numbers, one a line.
func flatten(b *strings.Builder, v resp.Value) {
	switch {
	case v.Null:
	case len(v.Elems) > 0:
		for _, e := range v.Elems {
			flatten(b, e)
		}
	case v.Type == resp.Integer:
		b.WriteString(strconv.FormatInt(v.Num, 10))
		b.WriteByte('\n')
	default:
		b.WriteString(v.Text())
		b.WriteByte('\n')
	}
}
