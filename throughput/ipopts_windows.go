//go:build windows

package throughput

const tosAvailable = false

func setTOS(uintptr, bool, int) error { return errNotAvailable }
