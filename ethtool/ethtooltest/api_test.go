package ethtooltest_test

import (
	"testing"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/stretchr/testify/assert"
)

func TestAPINilAndZeroInputs(t *testing.T) {
	enaapicheck.Call(t, "NewVeth(nil)", func() { assert.Nil(t, ethtooltest.NewVeth(nil)) })
	enaapicheck.Call(t, "NewIFB(nil)", func() { assert.Nil(t, ethtooltest.NewIFB(nil)) })
	enaapicheck.Call(t, "InNetns(path, nil)", func() {
		assert.ErrorContains(t, ethtooltest.InNetns("/run/netns/x", nil), "nil fn")
	})
	enaapicheck.Call(t, "InNetns(empty, fn)", func() {
		assert.Error(t, ethtooltest.InNetns("", func() error { return nil }))
	})
	got := enaapicheck.Methods(t, (*ethtooltest.Veth)(nil), &ethtooltest.Veth{})
	for name, res := range got {
		if len(res) == 1 {
			if s, ok := res[0].(string); ok {
				assert.Empty(t, s, name)
			}
		}
	}
	assert.Contains(t, got, "(*ethtooltest.Veth)(nil).NetnsPath")
}
