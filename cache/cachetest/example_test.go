package cachetest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// Start is usable outside tests, for tools that need a local server.
func ExampleStart() {
	s, err := cachetest.Start(context.Background(), &cachetest.Config{TLS: true, User: "bench"})
	if err != nil {
		log.Fatal(err) // errors.Is(err, cachetest.ErrNoServer) when nothing is installed
	}
	defer s.Close()
	fmt.Println(s.Addr, s.CAFile)
}
