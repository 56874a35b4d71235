package otelzk_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/executor/otelzk"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// Operations on an in-memory ZooKeeper, measured: the count of
// db.client.operation.duration per operation and outcome.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	obs, err := otelzk.New(otelzk.Config{MeterProvider: mp})
	if err != nil {
		panic(err)
	}
	srv := fakezk.New(fakezk.Config{})
	ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{Observer: obs}), Clock: srv.Clock(), Observer: obs})
	defer ex.Shutdown()

	executor.Submit(ex, task.Create("/app", nil, task.Persistent), nil)
	executor.Submit(ex, task.Create("/app", nil, task.Persistent), nil) // node exists
	executor.Submit(ex, task.Get("/app"), nil)
	ex.RunUntilIdle()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "db.client.operation.duration" {
			continue
		}
		for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			op, _ := dp.Attributes.Value("db.operation.name")
			et, _ := dp.Attributes.Value("error.type")
			fmt.Printf("%s %q: %d\n", op.AsString(), et.AsString(), dp.Count)
		}
	}
	// Unordered output:
	// create "": 1
	// create "node_exists": 1
	// get "": 1
}
