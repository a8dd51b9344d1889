// Package subnet resolves an EC2NodeClass's subnetSelectorTerms to subnets
// through EC2 DescribeSubnets.
//
// Each term with tags becomes one request whose filters are ANDed; terms with
// an id are grouped into one subnet-id request; the answers are ORed, merged,
// de-duplicated and sorted (most free IP addresses first, then by id, as
// upstream writes status.subnets). Answers are cached per request for the
// subnet refresh interval, so EC2NodeClasses sharing a term share the call.
// The result also says which terms matched nothing, so the controller's
// condition can name them.
//
// For launches, ZonalSubnets picks the subnet with the most free addresses in
// each zone, discounting addresses claimed by launches still in flight.
package subnet
