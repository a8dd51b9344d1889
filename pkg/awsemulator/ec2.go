package awsemulator

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// ec2Ops is the EC2 operation table (query protocol, API version 2016-11-15).
func ec2Ops() map[string]handler {
	return map[string]handler{
		"DescribeAvailabilityZones":     ec2DescribeAvailabilityZones,
		"DescribeSubnets":               ec2DescribeSubnets,
		"DescribeSecurityGroups":        ec2DescribeSecurityGroups,
		"DescribeImages":                ec2DescribeImages,
		"DescribeInstanceTypes":         ec2DescribeInstanceTypes,
		"DescribeInstanceTypeOfferings": ec2DescribeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":      ec2DescribeSpotPriceHistory,
		"CreateFleet":                   ec2CreateFleet,
		"CreateLaunchTemplate":          ec2CreateLaunchTemplate,
		"RunInstances":                  ec2RunInstances,
		"DescribeLaunchTemplates":       ec2DescribeLaunchTemplates,
		"DeleteLaunchTemplate":          ec2DeleteLaunchTemplate,
		"DescribeInstances":             ec2DescribeInstances,
		"TerminateInstances":            ec2TerminateInstances,
		"RebootInstances":               ec2RebootInstances,
		"CreateTags":                    ec2CreateTags,
		"DescribeCapacityReservations":  ec2DescribeCapacityReservations,
		"DescribeInstanceStatus":        ec2DescribeInstanceStatus,
		"DescribePlacementGroups":       ec2DescribePlacementGroups,
		"CreatePlacementGroup":          ec2CreatePlacementGroup,
		"DeletePlacementGroup":          ec2DeletePlacementGroup,
	}
}

// --- EC2 query parameters: flattened lists Name.1, Name.2 and structures Name.1.Field ---

// list returns Name.1, Name.2, ... until the first gap.
func (c *call) list(name string) []string {
	var out []string
	for i := 1; ; i++ {
		k := name + "." + strconv.Itoa(i)
		if !c.form.Has(k) {
			return out
		}
		out = append(out, c.form.Get(k))
	}
}

// count returns how many Name.N.* structures are present.
func (c *call) count(name string) int {
	n := 0
	for i := 1; ; i++ {
		prefix := name + "." + strconv.Itoa(i) + "."
		found := false
		for k := range c.form {
			if strings.HasPrefix(k, prefix) {
				found = true
				break
			}
		}
		if !found {
			return n
		}
		n++
	}
}

func (c *call) str(name string) string { return c.form.Get(name) }

func (c *call) boolean(name string) bool {
	v, _ := strconv.ParseBool(c.form.Get(name))
	return v
}

// integer reads an optional integer parameter.
func (c *call) integer(name string) (int, bool, *apiError) {
	v := c.form.Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, errorf(400, "InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected an integer.", v, name)
	}
	return n, true, nil
}

// page is the pagination of a Describe call as EC2 does it: MaxResults within
// [min, max] (absent: def, 0 = everything), NextToken an opaque offset.
type page struct{ def, min, max int }

// paginate returns the slice [offset, offset+limit) and the next token ("" at the end).
func paginate[T any](c *call, items []T, p page) ([]T, string, *apiError) {
	limit := p.def
	if n, ok, err := c.integer("MaxResults"); err != nil {
		return nil, "", err
	} else if ok {
		if n < p.min || n > p.max {
			return nil, "", errorf(400, "InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Parameter must be between %d and %d.", n, p.min, p.max)
		}
		limit = n
	}
	offset := 0
	if tok := c.str("NextToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		action, off, ok := strings.Cut(string(raw), ":")
		n, convErr := strconv.Atoi(off)
		if err != nil || !ok || action != c.action || convErr != nil || n < 0 || n > len(items) {
			return nil, "", errorf(400, "InvalidPaginationToken", "Invalid pagination token: %s", tok)
		}
		offset = n
	}
	if limit <= 0 || offset+limit >= len(items) {
		return items[offset:], "", nil
	}
	next := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d", c.action, offset+limit)))
	return items[offset : offset+limit], next, nil
}

// idsWithMaxResults: EC2 refuses MaxResults together with an explicit ID list.
func idsWithMaxResults(c *call, ids []string, idParam string) *apiError {
	if len(ids) > 0 && c.form.Has("MaxResults") {
		return errorf(400, "InvalidParameterCombination", "The parameter %s cannot be used with the parameter maxResults", idParam)
	}
	return nil
}

// dryRun answers a DryRun request that passed authorization, as EC2 does.
func dryRun() *apiError {
	return errorf(412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
}
