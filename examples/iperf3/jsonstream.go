package main

import (
	"net"
	"strconv"
)

// hostPort splits "host:port" into host and numeric port for messages.
func hostPort(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
