package throughput

import "io"

func ioReadFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }
