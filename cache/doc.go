// Package cache measures Valkey and Redis endpoints (including Amazon
// ElastiCache, node-based and serverless) the way the field study E3 did.
//
// A Prober opens fresh connections and times every phase on its own: DNS, TCP
// connect, TLS handshake, AUTH (password or ElastiCache IAM token), CLUSTER
// SLOTS and the first command, then close. It speaks RESP itself over net.Dialer
// and crypto/tls because no client library exposes those phases; the timings
// come from ClientTrace hooks that callers can attach too, in the style of
// net/http/httptrace.
//
// Run drives a GET/SET workload with a number of workers in two modes, pool
// (each worker reuses one client) and connect (each operation creates a client,
// runs one command and closes it), with two engines: "glide", the valkey-glide
// v2 client the field study used, and "resp", this package's lean RESP client.
// Running both on the same endpoint separates the endpoint's latency from the
// client library's overhead. RunRepeated reports the median of several runs with
// min-max ranges, and Compare reports two configurations as ratios.
//
// This is the only netperfkit package that imports valkey-glide, which needs
// cgo.
package cache
