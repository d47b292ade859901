// Package enaapicheck calls an exported API with nil, zero and negative
// inputs under a deadline: the api_test.go of ethtool, srd and runinfo use
// it to show that no input panics or hangs.
package enaapicheck

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// Deadline is how long one call may take.
const Deadline = time.Second

// Call runs f and fails tb when f panics or does not return within
// Deadline. It reports whether f returned normally.
func Call(tb testing.TB, name string, f func()) bool {
	tb.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	timer := time.NewTimer(Deadline)
	defer timer.Stop()
	select {
	case p := <-done:
		if p != nil {
			tb.Errorf("%s panicked: %v", name, p)
			return false
		}
		return true
	case <-timer.C:
		tb.Errorf("%s did not return within %v", name, Deadline)
		return false
	}
}

// Methods calls, under Call, every exported method of each of values with
// zero arguments (nil pointers, slices, maps, funcs and interfaces, zero
// numbers and strings). Pass a nil pointer, (*T)(nil), to call the methods
// declared on *T with a nil receiver (a method on T cannot be called
// through a nil *T in Go, whatever it does), and a pointer to a zero value,
// &T{}, to call them all on the zero value. A method with a nil receiver
// that returns an error must return one that is not nil. It returns every
// call's results by name ("(*T)(nil).Method" or "*T.Method"), for the
// caller to check what else they must hold.
func Methods(tb testing.TB, values ...any) map[string][]any {
	tb.Helper()
	out := map[string][]any{}
	for _, v := range values {
		rv := reflect.ValueOf(v)
		rt := rv.Type()
		isNil := rt.Kind() == reflect.Pointer && rv.IsNil()
		for i := range rt.NumMethod() {
			m := rt.Method(i)
			if isNil {
				if _, onValue := rt.Elem().MethodByName(m.Name); onValue {
					continue
				}
			}
			name := fmt.Sprintf("%s.%s", rt, m.Name)
			if isNil {
				name = fmt.Sprintf("(%s)(nil).%s", rt, m.Name)
			}
			fn := rv.Method(i)
			args := zeroArgs(fn.Type())
			var res []reflect.Value
			if !Call(tb, name, func() {
				if fn.Type().IsVariadic() {
					res = fn.CallSlice(args)
				} else {
					res = fn.Call(args)
				}
			}) {
				continue
			}
			got := make([]any, len(res))
			for j, r := range res {
				got[j] = r.Interface()
			}
			if n := len(res); isNil && n > 0 && fn.Type().Out(n-1) == errorType && res[n-1].IsNil() {
				tb.Errorf("%s returned a nil error", name)
			}
			out[name] = got
		}
	}
	return out
}

var errorType = reflect.TypeFor[error]()

func zeroArgs(ft reflect.Type) []reflect.Value {
	args := make([]reflect.Value, ft.NumIn())
	for i := range args {
		args[i] = reflect.Zero(ft.In(i))
	}
	return args
}
