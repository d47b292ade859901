// Command wirejitter computes the jitter of an iperf3 UDP flow from a packet
// capture, as iperf3 computes it (RFC 1889: a running mean of the change in
// transit time, over 16), with the capture's timestamps as arrival times and
// each datagram's iperf3 header as its send time. It is the referee when a
// receiver's reported jitter is in doubt: the capture stamps each datagram
// in the kernel, without the receiver's wake-up.
//
// Usage: tcpdump -i lo -s 96 --time-stamp-precision nano -w f.pcap 'udp and dst port P'
// while the test runs, then go run ./scripts/wirejitter f.pcap.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wirejitter FILE.pcap")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirejitter:", err)
		os.Exit(1)
	}
	defer f.Close()
	n, j, err := jitter(bufio.NewReader(f))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirejitter:", err)
		os.Exit(1)
	}
	fmt.Printf("%d datagrams, jitter %.4f ms\n", n, j*1e3)
}

// Link types whose headers jitter skips to reach the IPv4 header.
const (
	linkEthernet = 1   // loopback captures on linux
	linkLinuxSLL = 113 // tcpdump -i any
)

// jitter reads a little-endian pcap (micro- or nanosecond) and returns the
// number of iperf3 datagrams and their jitter in seconds.
func jitter(r io.Reader) (int, float64, error) {
	var gh [24]byte
	if _, err := io.ReadFull(r, gh[:]); err != nil {
		return 0, 0, fmt.Errorf("pcap header: %w", err)
	}
	var unit float64
	switch binary.LittleEndian.Uint32(gh[:4]) {
	case 0xa1b2c3d4:
		unit = 1e-6
	case 0xa1b23c4d:
		unit = 1e-9
	default:
		return 0, 0, errors.New("not a little-endian pcap file")
	}
	var skip int
	switch binary.LittleEndian.Uint32(gh[20:]) {
	case linkEthernet:
		skip = 14
	case linkLinuxSLL:
		skip = 16
	default:
		return 0, 0, errors.New("link type is neither ethernet nor linux cooked")
	}
	var (
		n           int
		j, prev     float64
		rec         [16]byte
		pkt         = make([]byte, 0, 256)
		havePrev    bool
		maxSnapshot = uint32(1 << 16)
	)
	for {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return n, j, nil
			}
			return n, j, fmt.Errorf("record header: %w", err)
		}
		incl := binary.LittleEndian.Uint32(rec[8:])
		if incl > maxSnapshot {
			return n, j, fmt.Errorf("record of %d bytes", incl)
		}
		if cap(pkt) < int(incl) {
			pkt = make([]byte, incl)
		}
		pkt = pkt[:incl]
		if _, err := io.ReadFull(r, pkt); err != nil {
			return n, j, fmt.Errorf("record: %w", err)
		}
		sent, ok := iperfSendTime(pkt, skip)
		if !ok {
			continue
		}
		arrival := float64(binary.LittleEndian.Uint32(rec[:4])) + float64(binary.LittleEndian.Uint32(rec[4:]))*unit
		transit := arrival - sent
		if havePrev {
			d := transit - prev
			if d < 0 {
				d = -d
			}
			j += (d - j) / 16
		}
		prev, havePrev = transit, true
		n++
	}
}

// iperfSendTime is the send time in an IPv4 UDP datagram's iperf3 header
// (seconds and microseconds, big-endian), after skip link-layer bytes.
func iperfSendTime(pkt []byte, skip int) (float64, bool) {
	if len(pkt) < skip+1 || pkt[skip]>>4 != 4 {
		return 0, false
	}
	ihl := int(pkt[skip]&15) * 4
	p := skip + ihl + 8 // past the IP and UDP headers
	if ihl < 20 || len(pkt) < p+8 {
		return 0, false
	}
	sec, usec := binary.BigEndian.Uint32(pkt[p:]), binary.BigEndian.Uint32(pkt[p+4:])
	return float64(sec) + float64(usec)*1e-6, true
}
