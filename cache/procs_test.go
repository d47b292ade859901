package cache_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/cache"
)

func TestProcs(t *testing.T) {
	cur, cpus := runtime.GOMAXPROCS(0), runtime.NumCPU()
	connect := func(workers int) *cache.WorkloadConfig {
		return &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: workers}
	}
	assert.Equal(t, 1, cache.Procs(connect(0)), "the default 4 workers")
	assert.Equal(t, 1, cache.Procs(connect(1)))
	assert.Equal(t, 1, cache.Procs(connect(4)))
	assert.Equal(t, min(2, cpus), cache.Procs(connect(5)))
	assert.Equal(t, cpus, cache.Procs(connect(4*cpus+4)), "never more than the CPUs")
	assert.Equal(t, cur, cache.Procs(&cache.WorkloadConfig{Mode: cache.Pooled, Workers: 1}), "pooled: unchanged")
	assert.Equal(t, cur, cache.Procs(&cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 1, Rate: 100}), "open loop: unchanged")
	assert.Equal(t, cur, cache.Procs(nil))
	other := connect(4)
	other.Engine = otherEngine{}
	assert.Equal(t, cur, cache.Procs(other), "another engine: unchanged")
}

// otherEngine stands for an engine other than the built-in one.
type otherEngine struct{ cache.Engine }
