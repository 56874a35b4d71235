module github.com/zkflow/zkflow

go 1.26
