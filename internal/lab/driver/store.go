package driver

import (
	"context"
	"fmt"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/adapters"
)

// StoreTarget runs every op as a blocking call of a store we did not
// write (package adapters: Redis, etcd, PostgreSQL, or an in-memory
// reference store), each in a goroutine of its own that hands the result
// back to the loop. Every group shares the store; an op's Option is the
// store's read or write option.
type StoreTarget struct {
	Loop  *Loop
	Store adapters.Store
	// Ctx bounds the calls: cancelling it cuts the calls in flight short
	// (the driver counts them as aborted once it is stopped).
	Ctx context.Context
}

// Open implements Target.
func (t *StoreTarget) Open(*Group) (Client, error) { return storeClient{t}, nil }

type storeClient struct{ t *StoreTarget }

func (c storeClient) Begin(string) (Session, error) { return storeClient(c), nil }
func (storeClient) Close()                          {}
func (storeClient) End()                            {}

func (c storeClient) Do(op *Op, done func()) {
	t := c.t
	go func() {
		op.Start = t.Loop.Now()
		var rep adapters.Report
		switch {
		case op.Bound != wire.NoBound:
			op.Err, op.Refused = fmt.Errorf("%w: a bound on %s", ErrUnsupported, t.Store.Name()), true
		case op.Kind == Put:
			rep, op.Err = t.Store.Write(t.Ctx, op.Key, string(op.Value), op.Option)
		case op.Kind == Get:
			var value string
			value, op.Found, rep, op.Err = t.Store.Read(t.Ctx, op.Key, op.Option)
			if op.Err == nil && op.Found {
				op.ValueID = ValueID([]byte(value))
			}
		default:
			op.Err, op.Refused = fmt.Errorf("%w: %s on %s", ErrUnsupported, op.Kind, t.Store.Name()), true
		}
		op.End = t.Loop.Now()
		op.Consistency, op.Node = rep.Consistency, rep.Replica
		t.Loop.Post(done)
	}()
}
