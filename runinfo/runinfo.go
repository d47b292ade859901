package runinfo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/netperfkit/netperfkit/ethtool"
)

// DefaultIMDSTimeout bounds the instance metadata exchange when
// Config.IMDSTimeout is 0: long enough for the link-local service on EC2
// (a few milliseconds), short enough not to delay a run elsewhere.
const DefaultIMDSTimeout = time.Second

// NotOnEC2 is Metadata.EC2Note's prefix when no instance metadata service
// answered.
const NotOnEC2 = "not on EC2"

// modulePath is netperfkit's module, whose version Collect reports.
const modulePath = "github.com/netperfkit/netperfkit"

// Config tunes Collect. A nil *Config means no interface, the SDK's IMDS
// endpoint, a 1 s IMDS timeout and no settings.
type Config struct {
	// Interface whose driver, driver version and MTU are reported; "" means
	// none.
	Interface string
	// Settings are the tool's settings (flag name to value), reported as
	// given.
	Settings map[string]string
	// IMDSEndpoint is the instance metadata service's base URL; "" means
	// the SDK's default (http://169.254.169.254, or
	// AWS_EC2_METADATA_SERVICE_ENDPOINT when set).
	IMDSEndpoint string
	// IMDSTimeout bounds the IMDSv2 token and identity document requests;
	// 0 means DefaultIMDSTimeout.
	IMDSTimeout time.Duration
	// SkipIMDS leaves the EC2 part out ("not asked" in EC2Note).
	SkipIMDS bool
}

// Metadata is the description of one run's environment.
type Metadata struct {
	Host              string `json:"host"`
	OS                string `json:"os"`
	Arch              string `json:"arch"`
	Kernel            string `json:"kernel,omitempty"`
	CPUModel          string `json:"cpu_model,omitempty"`
	CPUs              int    `json:"cpus"`
	GoVersion         string `json:"go_version"`
	NetperfkitVersion string `json:"netperfkit_version"`
	// Interface is nil when Config.Interface was "".
	Interface *Interface `json:"interface,omitempty"`
	// EC2 is nil when no instance metadata service answered; EC2Note then
	// says why, starting with NotOnEC2.
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

// Collect gathers the metadata. It never fails: what cannot be read is left
// empty, and the EC2 part says why it is missing.
func Collect(ctx context.Context, cfg *Config) *Metadata {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	m := &Metadata{
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GoVersion: runtime.Version(), NetperfkitVersion: Version(),
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
	if c.SkipIMDS {
		m.EC2Note = NotOnEC2 + ": the instance metadata service was not asked"
		return m
	}
	ec2, err := readEC2(ctx, c)
	if err != nil {
		m.EC2Note = NotOnEC2 + ": " + err.Error()
		return m
	}
	m.EC2 = ec2
	return m
}

// Version is netperfkit's module version as the running binary was built
// with it: the main module's version when netperfkit is the main module
// ("(devel)" for a build from a work tree), the dependency's version
// otherwise, and "unknown" without build information.
func Version() string {
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

// readEC2 asks IMDSv2 (a session token, then the instance identity
// document) within the timeout; the SDK client neither retries nor falls
// back to IMDSv1.
func readEC2(ctx context.Context, c Config) (*EC2, error) {
	timeout := c.IMDSTimeout
	if timeout <= 0 {
		timeout = DefaultIMDSTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := imds.New(imds.Options{
		Endpoint:       c.IMDSEndpoint,
		EnableFallback: aws.FalseTernary,
		Retryer:        aws.NopRetryer{},
	})
	out, err := client.GetInstanceIdentityDocument(ctx, &imds.GetInstanceIdentityDocumentInput{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no instance metadata service answered within %s", timeout)
		}
		return nil, fmt.Errorf("no IMDSv2 answer: %w", err)
	}
	return &EC2{
		InstanceType: out.InstanceType, AvailabilityZone: out.AvailabilityZone,
		InstanceID: out.InstanceID, Region: out.Region,
	}, nil
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
// sorted by name.
func (m *Metadata) WriteText(w io.Writer) error {
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
		// The note's first clause says it; the SDK's wording follows in JSON.
		note, _, _ := strings.Cut(m.EC2Note, ": operation error")
		line("ec2", note)
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
