package runinfo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseCPUInfo(t *testing.T) {
	x86 := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\n\nprocessor\t: 1\nmodel name\t: other\n"
	assert.Equal(t, "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", parseCPUInfo(strings.NewReader(x86)))
	graviton3 := "processor\t: 0\nBogoMIPS\t: 2100.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd40\n"
	assert.Equal(t, "ARM Neoverse-V1 (Graviton3)", parseCPUInfo(strings.NewReader(graviton3)))
	other := "CPU implementer\t: 0x61\nCPU part\t: 0x022\n"
	assert.Equal(t, "ARM implementer 0x61 part 0x022", parseCPUInfo(strings.NewReader(other)))
	assert.Empty(t, parseCPUInfo(strings.NewReader("")))
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add("model name\t: x\n")
	f.Add("CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n")
	f.Add(":::\n\n:")
	f.Fuzz(func(t *testing.T, s string) {
		_ = parseCPUInfo(strings.NewReader(s))
	})
}
