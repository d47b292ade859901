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
//     marshals to JSON with snake_case keys);
//   - Version: netperfkit's module version as the binary was built.
//
// Collect never fails: a value that cannot be read is left empty, and the
// EC2 part says why it is missing (EC2Note). Its one network exchange is
// bounded by Config.IMDSTimeout and by ctx.
//
// Dependencies: besides package ethtool (golang.org/x/sys), runinfo imports
// the AWS SDK's IMDS client, github.com/aws/aws-sdk-go-v2/feature/ec2/imds,
// and with it the modules github.com/aws/aws-sdk-go-v2 and
// github.com/aws/smithy-go; no other AWS service client. The conventions
// every netperfkit package follows are in docs/conventions.md.
package runinfo
