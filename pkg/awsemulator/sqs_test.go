package awsemulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestSQSQueueAndMessages(t *testing.T) {
	c := start(t)
	_, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karpenter-demo")})
	expectError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400) // the query-compatible code, as SQS sends it
	created, err := c.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("karpenter-demo")})
	ok(t, err)
	got, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karpenter-demo")})
	ok(t, err)
	if *got.QueueUrl != *created.QueueUrl || *got.QueueUrl != c.e.Endpoint()+"/123456789012/karpenter-demo" {
		t.Fatalf("queue URL %s / %s", *got.QueueUrl, *created.QueueUrl)
	}
	url := got.QueueUrl

	// Empty queue, no wait: nothing.
	empty, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
	ok(t, err)
	if len(empty.Messages) != 0 {
		t.Fatalf("empty queue gave %d messages", len(empty.Messages))
	}

	sent, err := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(`{"detail-type":"EC2 Spot Instance Interruption Warning"}`)})
	ok(t, err) // the SDK checks MD5OfMessageBody
	for i := 0; i < 14; i++ {
		_, err := c.e.SendQueueMessage("karpenter-demo", "event")
		ok(t, err)
	}
	if v, f := c.e.QueueDepth("karpenter-demo"); v != 15 || f != 0 {
		t.Fatalf("depth %d/%d", v, f)
	}
	batch, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
	ok(t, err)
	if len(batch.Messages) != 10 || *batch.Messages[0].MessageId != *sent.MessageId || batch.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("first batch: %d messages, first %+v", len(batch.Messages), batch.Messages[0])
	}
	rest, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	ok(t, err)
	if len(rest.Messages) != 5 {
		t.Fatalf("in-flight messages must stay hidden: got %d", len(rest.Messages))
	}
	for _, m := range append(batch.Messages, rest.Messages...) {
		_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		ok(t, err)
	}
	if v, f := c.e.QueueDepth("karpenter-demo"); v != 0 || f != 0 {
		t.Fatalf("after delete: %d/%d", v, f)
	}
	_, err = c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: aws.String("bogus")})
	expectError(t, err, "ReceiptHandleIsInvalid", 400)
	_, err = c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 11})
	expectError(t, err, "InvalidParameterValue", 400)
}

func TestSQSLongPollAndVisibility(t *testing.T) {
	c := start(t)
	created, err := c.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("interruption")})
	ok(t, err)

	// A long poll started on an empty queue returns the message sent while it waits,
	// in one call.
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, WaitTimeSeconds: 20, VisibilityTimeout: 1})
		done <- result{out, err}
	}()
	_, err = c.e.SendQueueMessage("interruption", "spot")
	ok(t, err)
	r := <-done
	ok(t, r.err)
	if len(r.out.Messages) != 1 || *r.out.Messages[0].Body != "spot" || c.e.Calls("sqs", "ReceiveMessage") != 1 {
		t.Fatalf("long poll: %+v after %d calls", r.out.Messages, c.e.Calls("sqs", "ReceiveMessage"))
	}
	// Not deleted: it comes back once its 1s visibility timeout ends, within one long poll.
	again, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, WaitTimeSeconds: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	ok(t, err)
	if len(again.Messages) != 1 || again.Messages[0].Attributes["ApproximateReceiveCount"] != "2" || *again.Messages[0].ReceiptHandle == *r.out.Messages[0].ReceiptHandle {
		t.Fatalf("redelivery: %+v", again.Messages)
	}
	if c.e.Calls("sqs", "ReceiveMessage") != 2 {
		t.Fatalf("redelivery took %d calls", c.e.Calls("sqs", "ReceiveMessage"))
	}
}
