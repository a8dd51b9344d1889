package awsemulator

// The launch operations. Authorization (DenyAction) runs before these handlers, so a
// DryRun request that reaches them answers DryRunOperation, as EC2 does for a caller
// that holds the permission.

func ec2RunInstances(c *call) (any, error) {
	if err := checkTenancy(c.str("Placement.Tenancy"), "placement.tenancy"); err != nil {
		return nil, err
	}
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	return nil, notYet(c)
}

func notYet(c *call) *apiError {
	return errorf(400, "UnsupportedOperation", "The emulator answers %s only with DryRun; launch through CreateFleet.", c.action)
}

// Tenancies EC2 knows: shared hardware, Dedicated Instances, Dedicated Hosts.
var tenancies = nameSet("default", "dedicated", "host")

// checkTenancy refuses a Placement.Tenancy EC2 does not know, as EC2 does
// (before any dry run answers).
func checkTenancy(v, param string) *apiError {
	if v == "" || tenancies[v] {
		return nil
	}
	return errorf(400, "InvalidParameterValue", "Value (%s) for parameter %s is invalid. Valid values are default, dedicated, host.", v, param)
}
