package awsemulator

// sqsOps is the SQS operation table (AWS JSON 1.0, X-Amz-Target AmazonSQS.<Op>).
func sqsOps() map[string]handler {
	return map[string]handler{}
}

type queue struct{}
