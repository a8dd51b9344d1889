// Package interruption acts on the EC2 events EventBridge puts into the
// interruption queue (INTERRUPTION_QUEUE), so that nodes leave gracefully
// before EC2 takes their instance away:
//
//   - spot interruption warning (two minutes' notice): the offering (spot,
//     instance type, zone) is marked unavailable so the replacement goes
//     elsewhere, and the NodeClaim is deleted; the core's termination then
//     taints and drains the node while the provisioner launches capacity for
//     the pods of the deleting node;
//   - AWS Health scheduled change, capacity reservation interruption, and
//     stopping/stopped/shutting-down/terminated state changes: the NodeClaim
//     is deleted;
//   - rebalance recommendation: an event only;
//   - anything else (other event kinds, instances that are not the cluster's,
//     bodies that do not parse): deleted from the queue and counted.
//
// The Controller is a singleton loop (a manager Runnable run by the leader):
// it long-polls the queue without pause, handles each batch's messages in
// parallel and deletes each once handled. A message whose handling failed is
// left on the queue and comes back after its visibility timeout. Instances
// are mapped to NodeClaims and Nodes by the instance ID in their provider ID
// (aws:///<zone>/<instance id>) through a cache index, so a message costs no
// API server round trip.
//
// The InstanceStatusController (instancestatus.go) runs whether or not a
// queue is configured: every minute it reads EC2's status checks and
// scheduled events through DescribeInstanceStatus (the instancestatus
// provider) and handles each unhealthy instance of a NodeClaim as a message
// of its category's kind: instance_status and system_status (a check failing
// for at least two minutes) delete the NodeClaim with its termination
// timestamp set to now, event_status (a scheduled reboot, maintenance,
// retirement or stop) deletes it with a normal drain.
package interruption
