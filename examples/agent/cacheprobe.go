package main

import (
	"context"
	"log/slog"
	"time"
)

// startCacheProbes probes each -cache endpoint every -cache-every on the
// mesh's schedule rules, one fresh connection at a time, into
// netperfkit_cache_phase_seconds.
func startCacheProbes(ctx context.Context, ms *mesh, cfg config, m *metrics, log *slog.Logger) error {
	for _, addr := range cfg.Cache {
		if cfg.CacheEvery == 0 {
			break
		}
		timeout := time.Duration(cfg.ProbeTimeout)
		p, err := newCacheProber(ctx, cacheEndpoint(addr, cfg.CacheTLS, cfg.CacheUser, timeout))
		if err != nil {
			return err
		}
		for _, kind := range []string{"timeout", "refused"} {
			m.errs.WithLabelValues(addr, kind)
		}
		log.Info("probing cache endpoint", "endpoint", addr, "tls", cfg.CacheTLS)
		ms.every(ctx, time.Duration(cfg.CacheEvery), func(ctx context.Context) {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			phases, kind, err := cacheProbePhases(pctx, p)
			if ctx.Err() != nil {
				return
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
