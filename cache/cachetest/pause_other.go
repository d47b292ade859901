//go:build !unix

package cachetest

import (
	"errors"
	"os"
)

var errNoPause = errors.New("not supported on this platform (no SIGSTOP)")

func stopProcess(*os.Process) error     { return errNoPause }
func continueProcess(*os.Process) error { return errNoPause }
