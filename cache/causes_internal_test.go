package cache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synTally is a run of ok successes at 200 us plus syn of them that waited
// one SYN retransmission each (1.02 s).
func synTally(ok, syn int) *causeTally {
	t := &causeTally{kernel: 232, hasRTO: true}
	n := &notes{}
	for i := range ok {
		n.connects = 1
		took := 200 * time.Microsecond
		if i < syn {
			took = 1020 * time.Millisecond
			n.addEvents(causeSYN, took, 1)
		}
		t.take(n, took, true)
	}
	return t
}

func TestCausesListenQueueTakesTheSYNs(t *testing.T) {
	tl := synTally(487, 14)
	f := &fakeDrops{n: 1000}
	w := startListenWatch(f.read)
	f.n += 14
	tl.listened(w)
	cs := tl.causes(respName, 487, 1020*time.Millisecond, 5*time.Second)
	assert.Equal(t, map[string]int64{"listen_queue": 14}, cs.Connects, "every SYN sent again was the listen queue's")
	assert.Equal(t, int64(14), cs.Events["listen_queue"])
	assert.Equal(t, 14*1020*time.Millisecond, cs.Added["listen_queue"])
	assert.Equal(t, "p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN that the server's full listen queue dropped (1.02 s)", cs.Tail)
	assert.Contains(t, cs.From, "TcpExtListenDrops of this network namespace rose by 14")
}

func TestCausesListenQueueShare(t *testing.T) {
	tl := synTally(400, 10)
	f := &fakeDrops{}
	w := startListenWatch(f.read)
	f.n = 4 // four of the ten SYNs
	tl.listened(w)
	cs := tl.causes(respName, 400, 1020*time.Millisecond, 5*time.Second)
	assert.Equal(t, map[string]int64{"listen_queue": 4, "syn_retransmit": 6}, cs.Connects)
	assert.Equal(t, map[string]int64{"listen_queue": 4, "syn_retransmit": 6}, cs.Events)
	assert.Equal(t, cs.Added["syn_retransmit"]+cs.Added["listen_queue"], 10*1020*time.Millisecond)
	assert.Contains(t, cs.Tail, "SYN retransmission", "the tail's six beat its four")

	// More drops than SYNs sent again (another client's, or ACKs the full
	// queue dropped): at most the run's own SYNs move.
	tl = synTally(400, 10)
	w = startListenWatch(f.read)
	f.n += 25
	tl.listened(w)
	cs = tl.causes(respName, 400, 1020*time.Millisecond, 5*time.Second)
	assert.Equal(t, map[string]int64{"listen_queue": 10}, cs.Events)
	assert.Contains(t, cs.From, "rose by 25")
}

func TestCausesListenQueueUnknown(t *testing.T) {
	tl := synTally(200, 3)
	tl.listened(nil) // a remote endpoint: no watch
	cs := tl.causes(respName, 200, 1020*time.Millisecond, 5*time.Second)
	assert.Equal(t, map[string]int64{"syn_retransmit": 3}, cs.Connects)
	assert.Contains(t, cs.Tail, "waited for a SYN retransmission (1.02 s)")
	assert.Contains(t, cs.From, "listen_queue: not known, the endpoint is not local or TcpExtListenDrops could not be read (syn_retransmit includes a full listen queue at the server)")

	// A local endpoint whose queue dropped nothing: the SYNs stay.
	tl = synTally(200, 3)
	f := &fakeDrops{n: 7}
	tl.listened(startListenWatch(f.read))
	cs = tl.causes(respName, 200, 1020*time.Millisecond, 5*time.Second)
	assert.Equal(t, map[string]int64{"syn_retransmit": 3}, cs.Connects)
	assert.Contains(t, cs.From, "rose by 0")

	// Nothing waited: no maps, no tail.
	tl = synTally(200, 0)
	tl.listened(startListenWatch(f.read))
	cs = tl.causes(respName, 200, time.Millisecond, 5*time.Second)
	assert.Nil(t, cs.Connects)
	assert.Empty(t, cs.Tail)
	require.NotEmpty(t, cs.From)
}

func TestCausesNamesComplete(t *testing.T) {
	for c := range numCauses {
		assert.NotEmpty(t, causeNames[c], "cause %d", c)
		assert.NotEmpty(t, causeWaits[c], "cause %d", c)
	}
}
