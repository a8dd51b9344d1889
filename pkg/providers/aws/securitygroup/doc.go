// Package securitygroup resolves an EC2NodeClass's securityGroupSelectorTerms
// to security groups through EC2 DescribeSecurityGroups.
//
// Each tag term becomes one request whose filters are ANDed; id terms are
// grouped into one group-id request and name terms (the EC2 group name, not
// the Name tag) into one group-name request. Answers are ORed, merged,
// de-duplicated and sorted by id (as upstream writes
// status.securityGroups), cached per request, and the terms that matched
// nothing are reported so the controller's condition can name them.
package securitygroup
