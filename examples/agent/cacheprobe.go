package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
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
			phases, kind, err := cacheProbePhases(pctx, p)
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
