module github.com/zkflow/zkflow

go 1.25

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/benbjohnson/clock v1.3.5
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/goleak v1.3.0
)
