package iam_test

import (
	"context"
	"fmt"
	"log"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/iam"
)

// ElastiCache IAM: the token is presigned with the standard AWS credential
// chain, refreshed before it expires, asked for by every new connection's
// AUTH, and never printed.
func ExampleNewTokenSource() {
	ctx := context.Background()
	ts, err := iam.NewTokenSource(ctx, "my-iam-user", &iam.Config{
		CacheName: "my-serverless-cache", Region: "us-east-1", Serverless: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	ep := &cache.Endpoint{Addr: "my-serverless-cache-xxxxxx.serverless.use1.cache.amazonaws.com:6379",
		TLS: true, Credentials: ts.Credentials}
	p, err := cache.NewProber(ep)
	if err != nil {
		log.Fatal(err)
	}
	r, err := p.Probe(ctx)
	if err != nil {
		log.Fatal(err) // a refused token is cache.ErrWrongPass
	}
	fmt.Println("AUTH with a token took", r.Phases[cache.PhaseAuth])
}
