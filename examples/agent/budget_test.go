package main

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for the budget.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestBudget(perHour int64) (*byteBudget, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b := newByteBudget(perHour)
	b.now = clk.now
	return b, clk
}

func TestBudgetSlidingHour(t *testing.T) {
	b, clk := newTestBudget(100)
	require.NotNil(t, b.reserve(60))
	clk.add(30 * time.Minute)
	require.NotNil(t, b.reserve(40))
	assert.Nil(t, b.reserve(1), "100 bytes spent within the hour")
	assert.Equal(t, int64(0), b.remaining())
	clk.add(30 * time.Minute) // the first 60 bytes are an hour old
	assert.Equal(t, int64(60), b.remaining())
	assert.Nil(t, b.reserve(61))
	require.NotNil(t, b.reserve(60))
	clk.add(time.Hour)
	assert.Equal(t, int64(100), b.remaining())
}

func TestBudgetSettleRefundsAndCharges(t *testing.T) {
	b, clk := newTestBudget(100)
	r := b.reserve(50)
	require.NotNil(t, r)
	b.settle(r, 10) // the probe ended early
	assert.Equal(t, int64(90), b.remaining())
	r2 := b.reserve(80)
	require.NotNil(t, r2)
	b.settle(r2, 85) // one block past the reservation is charged
	assert.Equal(t, int64(5), b.remaining())
	b.settle(r2, -1) // nonsense counts as nothing sent
	assert.Equal(t, int64(90), b.remaining())
	clk.add(2 * time.Hour)
	b.settle(r, 50) // expired: no effect
	assert.Equal(t, int64(100), b.remaining())
}

func TestBudgetZeroAllowsNothing(t *testing.T) {
	b, _ := newTestBudget(0)
	assert.Nil(t, b.reserve(1))
	assert.Nil(t, b.reserve(0), "a zero reservation is refused, not a free pass")
}

func TestBudgetConcurrentReservationsNeverOverspend(t *testing.T) {
	b, _ := newTestBudget(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 50 {
		wg.Go(func() {
			if b.reserve(100) != nil {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 10, granted)
	assert.Equal(t, int64(0), b.remaining())
}
