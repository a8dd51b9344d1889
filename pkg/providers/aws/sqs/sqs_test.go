package sqs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	awssqs "github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
)

func newProvider(t *testing.T, name string) (*awsemulator.Emulator, *awssqs.Provider) {
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	return em, awssqs.NewProvider(sqs.NewFromConfig(cfg), name)
}

func TestMissingQueueNamesIt(t *testing.T) {
	_, p := newProvider(t, "not-there")
	_, err := p.Receive(context.Background())
	if err == nil || !strings.Contains(err.Error(), `interruption queue "not-there" does not exist (INTERRUPTION_QUEUE)`) {
		t.Fatalf("error %v, want one naming the missing queue", err)
	}
}

func TestReceiveAndDelete(t *testing.T) {
	ctx := context.Background()
	em, p := newProvider(t, "interruptions")
	if _, err := em.CreateQueue("interruptions"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	for _, body := range []string{"a", "b", "c"} {
		if _, err := em.SendQueueMessage("interruptions", body); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := p.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("received %d messages, want 3", len(msgs))
	}
	for _, m := range msgs {
		if m.ID == "" || m.ReceiptHandle == "" || m.SentTime.Before(before) || m.SentTime.After(time.Now()) {
			t.Errorf("message %+v: missing ID, receipt handle or SentTimestamp", m)
		}
	}
	// Received messages are hidden for the visibility timeout, not gone.
	if visible, inFlight := em.QueueDepth("interruptions"); visible != 0 || inFlight != 3 {
		t.Fatalf("depth visible=%d in flight=%d, want 0 and 3", visible, inFlight)
	}
	for _, m := range msgs {
		if err := p.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if visible, inFlight := em.QueueDepth("interruptions"); visible+inFlight != 0 {
		t.Fatalf("depth visible=%d in flight=%d after deleting all", visible, inFlight)
	}
	// The URL is looked up once.
	if n := em.Calls("sqs", "GetQueueUrl"); n != 1 {
		t.Errorf("GetQueueUrl called %d times, want 1", n)
	}
}

// A batch is at most ten messages (SQS's maximum).
func TestReceiveAtMostTen(t *testing.T) {
	em, p := newProvider(t, "q")
	if _, err := em.CreateQueue("q"); err != nil {
		t.Fatal(err)
	}
	for range 15 {
		if _, err := em.SendQueueMessage("q", "x"); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := p.Receive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != awssqs.MaxMessages {
		t.Fatalf("received %d, want %d", len(msgs), awssqs.MaxMessages)
	}
}

// A queue created after the first failed lookup is found on the next call.
func TestQueueCreatedLater(t *testing.T) {
	ctx := context.Background()
	em, p := newProvider(t, "late")
	if _, err := p.URL(ctx); err == nil {
		t.Fatal("URL of a missing queue succeeded")
	}
	if _, err := em.CreateQueue("late"); err != nil {
		t.Fatal(err)
	}
	if _, err := em.SendQueueMessage("late", "x"); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.Receive(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive = %d messages, %v; want 1", len(msgs), err)
	}
}
