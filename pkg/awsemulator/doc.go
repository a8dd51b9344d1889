// Package awsemulator is an AWS emulator on the wire: one HTTP listener that answers
// EC2, IAM, SSM, Pricing, SQS, EKS and ARC zonal shift requests exactly as aws-sdk-go-v2 sends them and
// reads the answers, so the AWS provider runs its real SDK clients against it (tests
// build them from AWSConfig(); binaries reach it with AWS_ENDPOINT_URL from Env()).
//
// # Routing and protocols
//
// Every service shares the endpoint. A request is recognised by its shape, and the
// SigV4 credential scope must name the same service:
//
//	EC2      query: POST form Action=...&Version=2016-11-15; list params flattened
//	         (Filter.1.Name, Filter.1.Value.1, ImageId.1); XML answer
//	         <ActionResponse><requestId/>...</ActionResponse>, lists as <xSet><item>;
//	         errors <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/>.
//	IAM      awsQuery: POST form Action=...&Version=2010-05-08; lists as Tags.member.1.Key;
//	         XML answer inside <ActionResult>, lists as <member>; errors
//	         <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>.
//	SSM,     AWS JSON 1.1: POST /, X-Amz-Target AmazonSSM.GetParameter /
//	Pricing  AWSPriceListService.GetProducts; errors {"__type": code, "message": ...}.
//	SQS      AWS JSON 1.0: X-Amz-Target AmazonSQS.ReceiveMessage; errors as JSON 1.1 with
//	         "com.amazonaws.sqs#" type prefix plus X-Amzn-Query-Error (query-compatible code).
//	EKS      REST-JSON: GET /clusters/{name}; errors: X-Amzn-ErrorType header + {"message"}.
//	ARC      REST-JSON as EKS: /managedresources/{arn}, /zonalshifts[/{id}], /autoshifts
//	         (service arc-zonal-shift, arczonalshift.go).
//
// The shapes come from the SDK's own (de)serializers (ec2 and iam deserializers.go, the
// smithy schemas of the JSON services); element and member names match them exactly.
//
// # Request pipeline (server.go)
//
// control endpoint (/_emulator/, unsigned) | identify service + action | count (Calls) |
// SigV4 verification (sigv4.go: recomputes the SDK's canonical request; wrong key,
// region, service, signature or none -> the service's auth error) | faults (faults.go:
// deterministic Rate sequence, Count, Latency; status from the code as AWS sends it) |
// DenyAction (access denied in the service's shape, DryRun included) | IAM policy
// (authz.go, when SetPolicy set one; dry runs included) | handler.
//
// # State
//
// state.go holds one struct behind Emulator.mu: subnets, security groups, images,
// the immutable instance-type catalog (seed_instancetypes.go, built once per process
// from the embedded facts file), offerings and spot prices (seed.go), SSM parameters,
// IAM roles and instance profiles, the EKS cluster, SQS queues, insufficient-capacity
// marks and denials, and capacity reservations (none seeded; tests add them with
// AddCapacityReservation). Every ID is derived from a hash of stable inputs (hexID, upperID),
// so the default seed is identical on every run and generated IDs follow the call order.
//
// # Instances, Nodes and events
//
// lifecycle.go advances instances (pending -> running after Options.BootDelay on
// Options.Clock, shutting-down -> terminated) on observation and on a 100 ms tick;
// every transition goes through state.setState. nodes.go turns "running" into a Node of
// the cluster given by Options.Kubeconfig / RegisterNodesTo, read from the launch
// template's user data by the bootstrap parsers (bootstrap*.go: AL2023 NodeConfig MIME,
// AL2 bootstrap.sh, Bottlerocket TOML, Windows PowerShell), and deletes it on
// "terminated". events.go delivers EventBridge events (state changes, spot
// interruption, rebalance, scheduled change) to the queue SetEventQueue names.
// ec2_instancestatus.go answers DescribeInstanceStatus from the status checks and
// scheduled events SetInstanceHealth sets (every check passes until then).
//
// # Adding an operation
//
//  1. Write func(c *call) (any, error) in the service's file (ec2_*.go, iam.go, ...).
//     Read parameters with c.list/c.str/c.integer/parseFilters (query protocols) or
//     decodeJSON (JSON protocols). Lock state with c.e.locked(func(s *state){...}).
//  2. Return an xmlBody built with xb (query protocols: only the children of the
//     response/result element) or a JSON-marshalable value; return *apiError for AWS
//     errors (errorf(status, code, message)).
//  3. Register it in the service's ops table (ec2Ops, iamOps, ...). Pagination: paginate
//     with the call's page bounds; filters: checkFilters + matchFilters.
//  4. Test it through the SDK client (awsemulator_test: *_test.go next to the service).
//
// New resource kinds get a map in state (as instances and launch templates have), a
// seed or creation path, and exported test helpers next to the existing ones.
package awsemulator
