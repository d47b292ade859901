// Package runinfo describes where and how a measurement ran: the host, its
// kernel and CPUs, the Go and netperfkit versions, the measured interface's
// driver and MTU, the tool's settings and, on Amazon EC2, the instance type,
// Availability Zone and instance id read from the instance metadata service
// (IMDSv2). A report that carries this block can be compared with another
// one, or with a published study, without asking how it was made.
//
// Entry points:
//
//   - Collect: gather the Metadata, configured by Config (nil for the
//     defaults);
//   - Metadata.WriteText: the block as "key value" lines (Metadata also
//     marshals to JSON with snake_case keys); its NetperfkitVersion is
//     netperfkit's module version as the binary was built.
//
// Collect never fails: a value that cannot be read is left empty, and the
// EC2 part says why it is missing (EC2Note). Its one network exchange is
// IMDSv2's: a PUT for a session token, then one GET of the instance identity
// document with it, never retried and never falling back to IMDSv1. It is
// bounded by Config.IMDSTimeout and by ctx, gives up a connection not made
// within 250 ms, reads at most 64 KiB of an answer, and honours the
// environment variables the AWS SDKs read: AWS_EC2_METADATA_DISABLED=true
// (nothing is asked, and EC2Note says so) and
// AWS_EC2_METADATA_SERVICE_ENDPOINT.
//
// Dependencies: package ethtool (golang.org/x/sys) and the standard
// library, no more; the IMDSv2 client is net/http, and no AWS SDK module is
// imported. The conventions every netperfkit package follows are in
// docs/conventions.md.
package runinfo
