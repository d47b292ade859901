package cachecli

import "github.com/netperfkit/netperfkit/cache"

// PhaseMedians holds the median of each connection phase and of the total in
// microseconds, the field probe's table row; a phase that did not happen is 0.
type PhaseMedians struct {
	DNSUs          float64 `json:"dns_us"`
	TCPUs          float64 `json:"tcp_us"`
	TLSUs          float64 `json:"tls_us"`
	AuthUs         float64 `json:"auth_us"`
	ClusterSlotsUs float64 `json:"cluster_slots_us"`
	GetUs          float64 `json:"get_us"` // the first command, GET by default
	CloseUs        float64 `json:"close_us"`
	TotalUs        float64 `json:"total_us"`
}

// Medians returns the per-phase medians of s.
func Medians(s *cache.ProbeSummary) PhaseMedians {
	p := func(ph cache.Phase) float64 { return float64(s.Phases[ph].P50) / 1e3 }
	return PhaseMedians{
		DNSUs: p(cache.PhaseDNS), TCPUs: p(cache.PhaseConnect), TLSUs: p(cache.PhaseTLS), AuthUs: p(cache.PhaseAuth),
		ClusterSlotsUs: p(cache.PhaseClusterSlots), GetUs: p(cache.PhaseCommand), CloseUs: p(cache.PhaseClose),
		TotalUs: float64(s.Total.P50) / 1e3,
	}
}
