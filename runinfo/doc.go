// Package runinfo describes where and how a measurement ran: the host, its
// kernel and CPUs, the Go and netperfkit versions, the measured interface's
// driver and MTU, the tool's settings and, on Amazon EC2, the instance type,
// Availability Zone and instance id read from the instance metadata service
// (IMDSv2). A report that carries this block can be compared with another
// one, or with a published study, without asking how it was made.
//
// # Conventions
//
// netperfkit's packages share these conventions:
//
//   - A blocking call takes ctx first; Collect bounds its one network
//     exchange (IMDS) by Config.IMDSTimeout and by ctx, and when either ends
//     it returns what it read locally, with the EC2 part saying why it is
//     missing.
//   - A nil *Config means the documented defaults.
//   - Results are plain structs with snake_case JSON tags.
//   - Nothing here fails a run: a value that cannot be read is left empty.
package runinfo
