package glide

/*
#include <stdlib.h>

// valkey-glide's FFI (lib.h of github.com/valkey-io/valkey-glide/go/v2,
// linked by that package): its core logger's init and the result's free.
// Level is a C enum: ERROR 0, WARN 1, INFO 2, DEBUG 3, TRACE 4, OFF 5.
typedef struct LogResult {
	char *log_error;
	int level;
} LogResult;
extern LogResult *init(const int *level, const char *file_name);
extern void free_log_result(LogResult *result_ptr);

// npk_glide_log_init calls init; it returns a copy of the error (or NULL),
// which the caller frees.
static char *npk_glide_log_init(int level, const char *file_name) {
	LogResult *r = init(&level, file_name);
	char *err = NULL;
	if (r != NULL && r->log_error != NULL) {
		size_t n = 0;
		while (r->log_error[n] != 0) n++;
		err = malloc(n + 1);
		if (err != NULL) {
			for (size_t i = 0; i <= n; i++) err[i] = r->log_error[i];
		}
	}
	free_log_result(r);
	return err;
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// ffiLevel maps SetLog's level names to valkey-glide's C enum Level.
var ffiLevel = map[string]C.int{"error": 0, "warn": 1, "info": 2, "debug": 3, "trace": 4, "off": 5, "": 5}

// logEnvDir is the environment variable valkey-glide's logger takes its
// file's directory from.
const logEnvDir = "GLIDE_LOG_DIR"

// logMu guards logSet and serialises SetLog's use of GLIDE_LOG_DIR.
var (
	logMu  sync.Mutex
	logSet bool
)

// SetLog configures valkey-glide's core logger (its Rust core, which logs
// connection failures, reconnects and timeouts). That logger is global to the
// process: the setting applies to every glide client, this package's and
// any other's, and the last call wins. It is safe for concurrent use.
//
// With file empty, messages at level and above go to standard output, in
// glide's own format with ANSI colour codes (glide's console logger cannot
// write to standard error). With a file, they go to that file instead, in
// the same format, and never to the console; glide rotates it every hour:
// it writes file + ".YYYY-MM-DD-HH" (UTC), creating the directory.
//
// level is the lowest level recorded, one of glide's: "error", "warn"
// (warnings and errors), "info", "debug", "trace"; "off" (or "") records
// nothing. Another level is an error naming it.
//
// Unless SetLog was called first, the glide engine turns the logger off when it first
// opens, so that glide's warnings never interleave with a tool's output:
// quiet by default. Without that, glide logs warnings to standard output.
func SetLog(level, file string) error {
	lvl, ok := ffiLevel[level]
	if !ok {
		return fmt.Errorf("glide: SetLog: unknown level %q (error, warn, info, debug, trace or off)", level)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if err := setLog(lvl, file); err != nil {
		return err
	}
	logSet = true
	return nil
}

// quietLog turns the logger off unless SetLog was called.
func quietLog() {
	logMu.Lock()
	defer logMu.Unlock()
	if !logSet {
		_ = setLog(ffiLevel["off"], "")
		logSet = true
	}
}

// setLog calls glide's init; logMu is held. glide takes the file's
// directory from GLIDE_LOG_DIR, read during the call, so it is set for the
// call and restored after.
func setLog(level C.int, file string) error {
	var cfile *C.char
	if file != "" {
		if fi, err := os.Stat(file); strings.HasSuffix(file, string(filepath.Separator)) || (err == nil && fi.IsDir()) {
			return fmt.Errorf("glide: SetLog: file %q names a directory", file)
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return fmt.Errorf("glide: SetLog: %w", err)
		}
		dir, name := filepath.Split(abs)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("glide: SetLog: %w", err)
		}
		old, had := os.LookupEnv(logEnvDir)
		if err := os.Setenv(logEnvDir, dir); err != nil {
			return fmt.Errorf("glide: SetLog: %w", err)
		}
		defer func() {
			if had {
				_ = os.Setenv(logEnvDir, old)
			} else {
				_ = os.Unsetenv(logEnvDir)
			}
		}()
		cfile = C.CString(name)
		defer C.free(unsafe.Pointer(cfile))
	}
	if cerr := C.npk_glide_log_init(level, cfile); cerr != nil {
		defer C.free(unsafe.Pointer(cerr))
		return fmt.Errorf("glide: SetLog: %s", C.GoString(cerr))
	}
	return nil
}
