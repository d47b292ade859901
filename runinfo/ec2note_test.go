package runinfo

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dmiRoot(name string) string { return filepath.Join("testdata", "dmi", name) }

func TestReadDMI(t *testing.T) {
	d := readDMI(dmiRoot("nitro"))
	assert.Equal(t, "Amazon EC2", d.vendor)
	assert.Contains(t, d.amazon, "sys_vendor")
	d = readDMI(dmiRoot("xen"))
	assert.Equal(t, "Xen", d.vendor)
	assert.Contains(t, d.amazon, "bios_version", "Xen instances say amazon in the BIOS version")
	d = readDMI(dmiRoot("qemu"))
	assert.Equal(t, dmiEvidence{vendor: "QEMU"}, d)
	assert.Equal(t, dmiEvidence{}, readDMI(dmiRoot("none")), "no DMI data: nothing is known")
}

// TestEC2NoteNeedsEvidence: "not on EC2" only when the firmware says so; a
// silent or unasked IMDS alone is "unknown".
func TestEC2NoteNeedsEvidence(t *testing.T) {
	ctx := context.Background()
	for root, prefix := range map[string]string{
		"nitro": ec2Unknown + " (",
		"xen":   ec2Unknown + " (",
		"none":  ec2Unknown + " (",
		"qemu":  notOnEC2 + ": ",
	} {
		m := collect(ctx, &Config{IMDSEndpoint: "off"}, dmiRoot(root))
		assert.Nil(t, m.EC2)
		assert.True(t, strings.HasPrefix(m.EC2Note, prefix), "%s: %s", root, m.EC2Note)
		assert.Contains(t, m.EC2Note, "not asked", root)
	}
	m := collect(ctx, &Config{IMDSEndpoint: "off"}, dmiRoot("qemu"))
	assert.Contains(t, m.EC2Note, `"QEMU"`, "the note names its evidence")

	// A refused connection: IMDS disabled on EC2 looks the same.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	m = collect(ctx, &Config{IMDSEndpoint: closed}, dmiRoot("nitro"))
	assert.Nil(t, m.EC2)
	assert.True(t, strings.HasPrefix(m.EC2Note, ec2Unknown+" (no IMDSv2 answer"), m.EC2Note)
	assert.Contains(t, m.EC2Note, "Amazon EC2")
	assert.NotContains(t, m.EC2Note, notOnEC2)
	var b bytes.Buffer
	require.NoError(t, m.WriteText(&b))
	assert.Contains(t, b.String(), "ec2          unknown (no IMDSv2 answer; the firmware says Amazon EC2: sys_vendor \"Amazon EC2\")\n")

	m = collect(ctx, &Config{IMDSEndpoint: closed}, dmiRoot("none"))
	assert.True(t, strings.HasPrefix(m.EC2Note, ec2Unknown+" (no IMDSv2 answer"), m.EC2Note)
	b.Reset()
	require.NoError(t, m.WriteText(&b))
	assert.Contains(t, b.String(), "ec2          unknown (no IMDSv2 answer)\n")

	m = collect(ctx, &Config{IMDSEndpoint: closed}, dmiRoot("qemu"))
	assert.True(t, strings.HasPrefix(m.EC2Note, notOnEC2+": "), m.EC2Note)
}

// TestEC2NoteCancelled: a cancelled run is not a service that failed to
// answer within the timeout.
func TestEC2NoteCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := collect(ctx, &Config{IMDSEndpoint: "http://127.0.0.1:1"}, dmiRoot("none"))
	assert.Nil(t, m.EC2)
	assert.NotContains(t, m.EC2Note, "within")
	assert.Contains(t, m.EC2Note, "canceled")
	assert.True(t, strings.HasPrefix(m.EC2Note, ec2Unknown+" ("), m.EC2Note)
}

func TestEC2NoteCancelledInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		cancel() // the caller gives up while the request waits
		<-ctx.Done()
	}()
	m := collect(ctx, &Config{IMDSEndpoint: "http://" + ln.Addr().String(), IMDSTimeout: time.Minute}, dmiRoot("none"))
	assert.Nil(t, m.EC2)
	assert.NotContains(t, m.EC2Note, "within", "the timeout did not run out")
	assert.Contains(t, m.EC2Note, "cut short")
}
