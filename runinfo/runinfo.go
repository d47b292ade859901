package runinfo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
)

// defaultIMDSTimeout bounds the instance metadata exchange when
// Config.IMDSTimeout is 0: long enough for the link-local service on EC2
// (a few milliseconds), short enough not to delay a run elsewhere.
const defaultIMDSTimeout = time.Second

// notOnEC2 is Metadata.EC2Note's prefix when the instance metadata service
// did not answer (or was not asked) and the host's firmware (DMI) data says
// it is not Amazon hardware: positive evidence, not an absence of answer.
const notOnEC2 = "not on EC2"

// ec2Unknown is Metadata.EC2Note's prefix when the instance metadata
// service did not answer (or was not asked) and nothing proves the host is
// not on EC2: EC2 with IMDS disabled, or a container behind the IMDSv2 hop
// limit, looks the same as no EC2 at all. The reason follows in brackets.
const ec2Unknown = "unknown"

// modulePath is netperfkit's module, whose version Collect reports.
const modulePath = "github.com/netperfkit/netperfkit"

// Config tunes Collect. A nil *Config means no interface, the default IMDS
// endpoint, a 1 s IMDS timeout and no settings.
type Config struct {
	// Interface whose driver, driver version and MTU are reported; "" means
	// none.
	Interface string
	// Settings are the tool's settings (flag name to value), reported as
	// given.
	Settings map[string]string
	// IMDSEndpoint is the instance metadata service's base URL; "" means
	// AWS_EC2_METADATA_SERVICE_ENDPOINT when it is set, as the AWS SDKs
	// read it, and http://169.254.169.254 otherwise. The service is asked
	// directly, never through an HTTP proxy. "off" leaves the EC2 part out
	// ("not asked" in EC2Note); the environment variable
	// AWS_EC2_METADATA_DISABLED=true does the same, as it does for the AWS
	// SDKs, and EC2Note names it.
	IMDSEndpoint string
	// IMDSTimeout bounds the IMDSv2 token and identity document requests
	// together; 0 means 1 s. Whatever it is, a connection
	// not made within 250 ms is given up (off EC2 nothing answers at the
	// link-local address), and nothing is retried. A negative timeout is
	// refused: the service is not asked and EC2Note says why.
	IMDSTimeout time.Duration
}

// sysRoot is where Collect reads /sys from; tests point collect at
// fixtures instead.
const sysRoot = "/"

// Metadata is the description of one run's environment.
type Metadata struct {
	Host      string `json:"host"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kernel    string `json:"kernel,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	// NetperfkitVersion is netperfkit's module version as the running
	// binary was built with it: the main module's version when netperfkit
	// is the main module ("(devel)" for a build from a work tree, with the
	// VCS revision), the dependency's otherwise (with its replacement),
	// and "unknown" without build information.
	NetperfkitVersion string `json:"netperfkit_version"`
	// Interface is nil when Config.Interface was "".
	Interface *Interface `json:"interface,omitempty"`
	// EC2 is nil when no instance metadata service answered; EC2Note then
	// says why, starting with "not on EC2" when the firmware data shows the
	// host is not Amazon hardware and with "unknown" otherwise.
	EC2      *EC2              `json:"ec2,omitempty"`
	EC2Note  string            `json:"ec2_note,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
}

// Interface is the measured interface.
type Interface struct {
	Name          string `json:"name"`
	Driver        string `json:"driver,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	MTU           int    `json:"mtu,omitempty"`
	// Note says what could not be read, when something could not.
	Note string `json:"note,omitempty"`
}

// EC2 is what IMDSv2's instance identity document says of the instance.
type EC2 struct {
	InstanceType     string `json:"instance_type"`
	AvailabilityZone string `json:"availability_zone"`
	InstanceID       string `json:"instance_id"`
	Region           string `json:"region"`
}

// Collect gathers the metadata. It never fails and never returns nil: what
// cannot be read is left empty, and the EC2 part says why it is missing. A
// nil ctx, like a negative Config.IMDSTimeout, reads everything local and
// leaves the instance metadata service unasked, with EC2Note naming the
// argument.
func Collect(ctx context.Context, cfg *Config) *Metadata {
	return collect(ctx, cfg, sysRoot)
}

// collect is Collect reading the DMI data under root.
func collect(ctx context.Context, cfg *Config, root string) *Metadata {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	m := &Metadata{
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GoVersion: runtime.Version(), NetperfkitVersion: version(),
		Kernel: kernel(), CPUModel: cpuModel(),
	}
	m.Host, _ = os.Hostname()
	if len(c.Settings) > 0 {
		m.Settings = make(map[string]string, len(c.Settings))
		for k, v := range c.Settings {
			m.Settings[k] = v
		}
	}
	if c.Interface != "" {
		m.Interface = readInterface(c.Interface)
	}
	if why := notAsked(ctx, c); why != "" {
		m.EC2Note = ec2Note(readDMI(root), why)
		return m
	}
	ec2, err := readEC2(ctx, c)
	if err != nil {
		m.EC2Note = ec2Note(readDMI(root), err.Error())
		return m
	}
	m.EC2 = ec2
	return m
}

// imdsOff as Config.IMDSEndpoint leaves the EC2 part out.
const imdsOff = "off"

// notAsked says why the instance metadata service is not to be asked, ""
// when it is.
func notAsked(ctx context.Context, c Config) string {
	const prefix = "the instance metadata service was not asked"
	switch {
	case c.IMDSEndpoint == imdsOff:
		return prefix
	case ctx == nil:
		return prefix + ": nil context.Context ctx"
	case c.IMDSTimeout < 0:
		return fmt.Sprintf("%s: Config.IMDSTimeout is negative (%v)", prefix, c.IMDSTimeout)
	case imdsDisabled():
		return prefix + ": " + envIMDSDisabled + " is true"
	}
	return ""
}

// ec2Note says why the EC2 part is missing: "not on EC2" only when the
// firmware data proves it, "unknown (...)" otherwise.
func ec2Note(d dmiEvidence, why string) string {
	switch {
	case d.amazon != "":
		return ec2Unknown + " (" + why + "; the firmware says Amazon EC2: " + d.amazon + ")"
	case d.vendor != "":
		return notOnEC2 + ": the firmware's sys_vendor is " + strconv.Quote(d.vendor) + "; " + why
	}
	return ec2Unknown + " (" + why + ")"
}

// dmiEvidence is what the firmware (DMI) says of the host's maker.
type dmiEvidence struct {
	// amazon names the file and value that show Amazon hardware, "" when
	// none does.
	amazon string
	// vendor is sys_vendor when it could be read, "" otherwise.
	vendor string
}

// readDMI reads the DMI identity files (linux; elsewhere they do not exist
// and nothing is known). Nitro instances say sys_vendor "Amazon EC2" and
// carry the instance id in board_asset_tag; Xen instances say "Xen" but
// "amazon" in bios_version, and /sys/hypervisor/uuid starts with "ec2".
func readDMI(root string) dmiEvidence {
	var d dmiEvidence
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	const dir = "sys/class/dmi/id/"
	d.vendor = read(dir + "sys_vendor")
	for _, f := range []string{"sys_vendor", "bios_vendor", "bios_version", "product_name", "product_version", "board_vendor"} {
		if v := read(dir + f); strings.Contains(strings.ToLower(v), "amazon") {
			d.amazon = f + " " + strconv.Quote(v)
			return d
		}
	}
	if v := read(dir + "board_asset_tag"); strings.HasPrefix(v, "i-") {
		d.amazon = "board_asset_tag " + strconv.Quote(v)
		return d
	}
	if v := read("sys/hypervisor/uuid"); strings.HasPrefix(strings.ToLower(v), "ec2") {
		d.amazon = "hypervisor uuid " + strconv.Quote(v)
	}
	return d
}

// version is netperfkit's module version as the running binary was built
// with it (Metadata.NetperfkitVersion): the main module's version when netperfkit is the main module
// ("(devel)" for a build from a work tree), the dependency's version
// otherwise, and "unknown" without build information.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if bi.Main.Path == modulePath {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				v += " " + s.Value
			}
		}
		return v
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

func readInterface(name string) *Interface {
	it := &Interface{Name: name}
	var notes []string
	if ni, err := net.InterfaceByName(name); err == nil {
		it.MTU = ni.MTU
	} else {
		notes = append(notes, "MTU: "+err.Error())
	}
	if s, err := ethtool.ReadSnapshot(name); err == nil {
		it.Driver, it.DriverVersion = s.Driver, s.DriverVersion
	} else if !errors.Is(err, ethtool.ErrNoStats) {
		notes = append(notes, "driver: "+err.Error())
	}
	it.Note = strings.Join(notes, "; ")
	return it
}

// kernel is the running kernel's release (linux), or "".
func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// cpuModel reads /proc/cpuinfo (linux): "model name" on x86, the
// implementer and part numbers on arm64, which has no model name.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return parseCPUInfo(f)
}

func parseCPUInfo(r io.Reader) string {
	fields := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := fields[k]; !seen && v != "" {
			fields[k] = v
		}
	}
	for _, k := range []string{"model name", "Model Name", "cpu model", "cpu"} {
		if v := fields[k]; v != "" {
			return v
		}
	}
	if impl, part := fields["CPU implementer"], fields["CPU part"]; impl != "" || part != "" {
		return armName(impl, part)
	}
	return ""
}

// armName names the arm64 cores EC2 uses (Graviton 2/3/4), else the raw ids.
func armName(impl, part string) string {
	known := map[string]string{
		"0x41/0xd0c": "ARM Neoverse-N1 (Graviton2)",
		"0x41/0xd40": "ARM Neoverse-V1 (Graviton3)",
		"0x41/0xd4f": "ARM Neoverse-V2 (Graviton4)",
	}
	if n, ok := known[impl+"/"+part]; ok {
		return n
	}
	return fmt.Sprintf("ARM implementer %s part %s", impl, part)
}

// WriteText prints the block as "key  value" lines, settings last and
// sorted by name. A nil m or w is an error.
func (m *Metadata) WriteText(w io.Writer) error {
	if m == nil {
		return errors.New("runinfo: WriteText: nil *Metadata")
	}
	if w == nil {
		return errors.New("runinfo: WriteText: nil io.Writer w")
	}
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %-12s %s\n", k, v)
		}
	}
	b.WriteString("run metadata\n")
	line("host", m.Host)
	line("os", m.OS+"/"+m.Arch+" "+m.Kernel)
	line("cpu", fmt.Sprintf("%d x %s", m.CPUs, orDash(m.CPUModel)))
	line("go", m.GoVersion)
	line("netperfkit", m.NetperfkitVersion)
	if it := m.Interface; it != nil {
		v := it.Name
		if it.Driver != "" {
			v += ", driver " + strings.TrimSpace(it.Driver+" "+it.DriverVersion)
		}
		if it.MTU > 0 {
			v += fmt.Sprintf(", MTU %d", it.MTU)
		}
		if it.Note != "" {
			v += " (" + it.Note + ")"
		}
		line("interface", v)
	}
	if e := m.EC2; e != nil {
		line("ec2", fmt.Sprintf("%s in %s (%s), %s", e.InstanceType, e.AvailabilityZone, e.Region, e.InstanceID))
	} else {
		line("ec2", shortNote(m.EC2Note))
	}
	if len(m.Settings) > 0 {
		keys := make([]string, 0, len(m.Settings))
		for k := range m.Settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + m.Settings[k]
		}
		line("settings", strings.Join(parts, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortNote is EC2Note for the text block: the detail of a transport
// failure (the dial or HTTP error), which the JSON keeps, is left out.
func shortNote(n string) string {
	head := ec2Unknown + " (" + noIMDSv2Answer
	rest, ok := strings.CutPrefix(n, head+": ")
	if !ok {
		return n
	}
	if _, tail, ok := strings.Cut(rest, "; the firmware"); ok {
		return head + "; the firmware" + tail
	}
	return head + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
