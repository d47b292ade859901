package runinfo_test

import (
	"context"
	"encoding/json"
	"os"

	"github.com/netperfkit/netperfkit/runinfo"
)

// A report's metadata block: the host, eth0's driver and MTU, and, on EC2,
// the instance type and Availability Zone.
func ExampleCollect() {
	m := runinfo.Collect(context.Background(), &runinfo.Config{Interface: "eth0", Settings: map[string]string{"streams": "8"}})
	_ = m.WriteText(os.Stdout)
	_ = json.NewEncoder(os.Stdout).Encode(m)
}

func ExampleMetadata_WriteText() {
	m := &runinfo.Metadata{
		Host: "client-1", OS: "linux", Arch: "arm64", Kernel: "6.12.0", CPUs: 8, CPUModel: "ARM Neoverse-V2 (Graviton4)",
		GoVersion: "go1.26.0", NetperfkitVersion: "v0.3.0",
		Interface: &runinfo.Interface{Name: "eth0", Driver: "ena", DriverVersion: "2.17.0g", MTU: 9001},
		EC2:       &runinfo.EC2{InstanceType: "c8gn.2xlarge", AvailabilityZone: "us-east-1a", Region: "us-east-1", InstanceID: "i-0123456789abcdef0"},
		Settings:  map[string]string{"streams": "8", "duration": "15s"},
	}
	_ = m.WriteText(os.Stdout)
	// Output:
	// run metadata
	//   host         client-1
	//   os           linux/arm64 6.12.0
	//   cpu          8 x ARM Neoverse-V2 (Graviton4)
	//   go           go1.26.0
	//   netperfkit   v0.3.0
	//   interface    eth0, driver ena 2.17.0g, MTU 9001
	//   ec2          c8gn.2xlarge in us-east-1a (us-east-1), i-0123456789abcdef0
	//   settings     duration=15s streams=8
}
