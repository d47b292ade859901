package enaapicheck

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type thing struct{ n int }

func (t *thing) Fails() error {
	if t == nil {
		return errors.New("nil thing")
	}
	return nil
}

func (t *thing) Silent() error { return nil }

func (t *thing) Panics() int { return t.n }

func (t thing) Value() int { return t.n }

func TestCall(t *testing.T) {
	r := &recorder{TB: t}
	assert.True(t, Call(r, "fine", func() {}))
	assert.False(t, Call(r, "boom", func() { panic("boom") }))
	assert.False(t, Call(r, "stuck", func() { time.Sleep(Deadline + 500*time.Millisecond) }))
	assert.Equal(t, []string{"boom panicked: boom", "stuck did not return within 1s"}, r.errs)
}

func TestMethods(t *testing.T) {
	r := &recorder{TB: t}
	got := Methods(r, (*thing)(nil), &thing{n: 3})
	assert.Equal(t, []string{
		"(*enaapicheck.thing)(nil).Panics panicked: runtime error: invalid memory address or nil pointer dereference",
		"(*enaapicheck.thing)(nil).Silent returned a nil error",
	}, r.errs)
	assert.NotContains(t, got, "(*enaapicheck.thing)(nil).Value", "a method on the value is not called through a nil pointer")
	assert.EqualError(t, got["(*enaapicheck.thing)(nil).Fails"][0].(error), "nil thing")
	assert.Equal(t, []any{3}, got["*enaapicheck.thing.Value"])
	assert.Equal(t, []any{3}, got["*enaapicheck.thing.Panics"])
}
