package throughput

import "net"

// localAddr is the local address for a client socket of network ("tcp" or
// "udp") on port, nil when neither BindAddr nor port is set.
func localAddr(c *Config, network string, port int) net.Addr {
	if c.BindAddr == "" && port == 0 {
		return nil
	}
	ip := net.ParseIP(c.BindAddr)
	if network == "udp" {
		return &net.UDPAddr{IP: ip, Port: port}
	}
	return &net.TCPAddr{IP: ip, Port: port}
}

// streamPort is the local port of the stream with iperf3 id (1, 3, 4, ...)
// under ClientPort, 0 when unset.
func streamPort(c *Config, id int) int {
	if c.ClientPort == 0 {
		return 0
	}
	i := 0
	if id > 1 {
		i = id - 2
	}
	return c.ClientPort + i
}
