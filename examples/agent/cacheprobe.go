package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cacheProbeTrips is the round trips of a cache connection probe (TCP, TLS,
// AUTH, the command) that -starved-wait is multiplied by.
const cacheProbeTrips = 5

// startCacheProbes probes each -cache endpoint every -cache-every on the
// mesh's schedule rules, one fresh connection at a time, into
// netperfkit_cache_phase_seconds.
func startCacheProbes(ctx context.Context, ms *mesh, cfg config, m *metrics, log *slog.Logger) error {
	var caPEM []byte
	if cfg.CacheCAFile != "" && len(cfg.Cache) > 0 {
		var err error
		if caPEM, err = os.ReadFile(cfg.CacheCAFile); err != nil {
			return fmt.Errorf("-cache-ca: %w", err)
		}
	}
	var causesTotal *prometheus.CounterVec
	if len(cfg.Cache) > 0 && cfg.CacheEvery != 0 {
		causesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netperfkit_cache_connect_causes_total",
			Help: "Cache probes whose connection set-up waited on a cause (cache.Causes): syn_retransmit (TCP_INFO after the connect), dns_retry, tls_overrun, auth_overrun, slots_overrun, client_budget. A probe that waited on two counts under both.",
		}, []string{"endpoint", "cause"})
		m.reg.MustRegister(causesTotal)
	}
	for _, addr := range cfg.Cache {
		if cfg.CacheEvery == 0 {
			break
		}
		timeout := time.Duration(cfg.ProbeTimeout)
		p, err := newCacheProber(ctx, cacheEndpoint(addr, cfg.CacheTLS, caPEM, cfg.CacheUser, timeout))
		if err != nil {
			return err
		}
		log.Info("probing cache endpoint", "endpoint", addr, "tls", cfg.CacheTLS)
		ms.every(ctx, time.Duration(cfg.CacheEvery), func(ctx context.Context) {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			before := ms.cfg.starve.sample()
			phases, causes, kind, err := cacheProbePhases(pctx, p)
			if ctx.Err() != nil {
				return
			}
			if why := ms.cfg.starve.judge(before, ms.cfg.starve.sample(), cacheProbeTrips); why != "" {
				// Counted, not kept out: the phases are few and labelled by
				// endpoint; the counter says which windows to distrust.
				m.starved.WithLabelValues("cache", why).Inc()
			}
			for phase, d := range phases {
				m.cachePhase.WithLabelValues(addr, phase).Observe(d.Seconds())
			}
			for _, c := range causes {
				causesTotal.WithLabelValues(addr, c).Inc()
			}
			if err != nil {
				if kind == "" {
					kind = probeErrorKind(err)
				}
				m.probeError(addr, kind)
				log.Debug("cache probe failed", "endpoint", addr, "kind", kind, "err", err)
			}
		})
	}
	return nil
}
