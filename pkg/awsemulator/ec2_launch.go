package awsemulator

// The launch operations. Authorization (DenyAction) runs before these handlers, so a
// DryRun request that reaches them answers DryRunOperation, as EC2 does for a caller
// that holds the permission.

func ec2RunInstances(c *call) (any, error) {
	if c.boolean("DryRun") {
		return nil, dryRun()
	}
	return nil, notYet(c)
}

func notYet(c *call) *apiError {
	return errorf(400, "UnsupportedOperation", "The emulator answers %s only with DryRun; launch through CreateFleet.", c.action)
}
