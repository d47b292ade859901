package ethtool

import (
	"strconv"
	"strings"
)

// Queue is the statistics of one hardware queue in one direction, with the
// queue prefix removed from the names ("queue_3_rx_bytes" is "bytes" of
// Queue{Index: 3, Kind: "rx"}).
type Queue struct {
	Index int `json:"index"`
	// Kind is "tx", "rx" or "xdp_tx" (ENA's XDP transmit queues).
	Kind  string `json:"kind"`
	Stats Stats  `json:"stats"`
}

// QueueTotal sums one kind of queue over all its queues, name by name.
type QueueTotal struct {
	Kind   string `json:"kind"`
	Queues int    `json:"queues"`
	Stats  Stats  `json:"stats"`
}

// QueueGroups is a statistics list split into per-queue statistics, their
// totals and everything else.
type QueueGroups struct {
	// Queues in the order their first statistic appears.
	Queues []Queue `json:"queues"`
	// Totals per kind, in the order the kinds first appear.
	Totals []QueueTotal `json:"totals"`
	// Other holds the statistics that belong to no queue.
	Other Stats `json:"other"`
}

// GroupQueues splits s by queue. It understands ENA's queue_N_tx_*,
// queue_N_rx_* and queue_N_xdp_tx_*, and the rx_queue_N_* / tx_queue_N_*
// style of veth, virtio_net, ifb and the Intel drivers.
func GroupQueues(s Stats) QueueGroups {
	var g QueueGroups
	type key struct {
		kind  string
		index int
	}
	pos := map[key]int{}
	totalPos := map[string]int{}
	for _, st := range s {
		kind, index, name, ok := splitQueueName(st.Name)
		if !ok {
			g.Other = append(g.Other, st)
			continue
		}
		ti, seen := totalPos[kind]
		if !seen {
			ti = len(g.Totals)
			totalPos[kind] = ti
			g.Totals = append(g.Totals, QueueTotal{Kind: kind})
		}
		t := &g.Totals[ti]

		k := key{kind, index}
		i, seen := pos[k]
		if !seen {
			i = len(g.Queues)
			pos[k] = i
			g.Queues = append(g.Queues, Queue{Index: index, Kind: kind})
			t.Queues++
		}
		g.Queues[i].Stats = append(g.Queues[i].Stats, Stat{Name: name, Value: st.Value})

		found := false
		for j := range t.Stats {
			if t.Stats[j].Name == name {
				t.Stats[j].Value += st.Value
				found = true
				break
			}
		}
		if !found {
			t.Stats = append(t.Stats, Stat{Name: name, Value: st.Value})
		}
	}
	return g
}

// Total returns the sum of the statistic called name over the queues of
// kind, and whether any queue has it.
func (g QueueGroups) Total(kind, name string) (uint64, bool) {
	for _, t := range g.Totals {
		if t.Kind == kind {
			return t.Stats.Get(name)
		}
	}
	return 0, false
}

// splitQueueName recognises a per-queue statistic name.
func splitQueueName(s string) (kind string, index int, name string, ok bool) {
	if rest, found := strings.CutPrefix(s, "queue_"); found {
		index, rest, ok = leadingIndex(rest)
		if !ok {
			return "", 0, "", false
		}
		for _, k := range []string{"xdp_tx", "tx", "rx"} {
			if n, found := strings.CutPrefix(rest, k+"_"); found && n != "" {
				return k, index, n, true
			}
		}
		return "", 0, "", false
	}
	for _, k := range []string{"tx", "rx"} {
		if rest, found := strings.CutPrefix(s, k+"_queue_"); found {
			index, rest, ok = leadingIndex(rest)
			if ok && rest != "" {
				return k, index, rest, true
			}
		}
	}
	return "", 0, "", false
}

// leadingIndex parses "12_rest" into 12 and "rest".
func leadingIndex(s string) (int, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 6 || i >= len(s) || s[i] != '_' {
		return 0, "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return 0, "", false
	}
	return n, s[i+1:], true
}
