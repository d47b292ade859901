package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// stampedTransport is a transport whose last read arrived at a given time.
type stampedTransport struct {
	transport
	at time.Time
}

func (s stampedTransport) arrived() time.Time { return s.at }

// An under-load round trip ends at the reply's kernel receive stamp, not at
// its read: the sleeping sender's wake-up is kept out of it, and bounded by
// the round trip when the wall clock disagrees with the monotonic one.
func TestArrivalTakesTheKernelStamp(t *testing.T) {
	base := time.Now()
	readAt := base.Add(500 * time.Microsecond)
	wall := readAt.Round(0) // the kernel's stamps carry no monotonic reading
	for _, tc := range []struct {
		name    string
		at      time.Time
		tx      int64
		rx      time.Duration
		wake    time.Duration
		stamped bool
	}{
		{"stamped", wall.Add(-40 * time.Microsecond), int64(100 * time.Microsecond), 460 * time.Microsecond, 40 * time.Microsecond, true},
		{"no stamp", time.Time{}, int64(100 * time.Microsecond), 500 * time.Microsecond, 0, false},
		{"stamp after the read", wall.Add(time.Millisecond), int64(100 * time.Microsecond), 500 * time.Microsecond, 0, true},
		{"stamp before the send", wall.Add(-time.Second), int64(100 * time.Microsecond), 100 * time.Microsecond, 400 * time.Microsecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{base: base, tr: stampedTransport{at: tc.at}}
			rx, wake, stamped := r.arrival(readAt, tc.tx)
			assert.Equal(t, int64(tc.rx), rx)
			assert.Equal(t, tc.wake, wake)
			assert.Equal(t, tc.stamped, stamped)
		})
	}
}
