package glide

import (
	"context"

	"github.com/netperfkit/netperfkit/cache"
)

// SetTokenSource makes the engine sign serverless IAM passwords with tok
// and report each client's refresh to onRefresh, until the returned
// function restores the defaults.
func SetTokenSource(tok func(ctx context.Context) (cache.Secret, error), onRefresh func()) (restore func()) {
	oldNew, oldRefreshed := newTokenSource, refreshed
	newTokenSource = func(context.Context, string, *cache.IAMConfig) (tokenSource, error) {
		return tokenFunc(tok), nil
	}
	refreshed = onRefresh
	return func() { newTokenSource, refreshed = oldNew, oldRefreshed }
}

type tokenFunc func(ctx context.Context) (cache.Secret, error)

func (f tokenFunc) Token(ctx context.Context) (cache.Secret, error) { return f(ctx) }
