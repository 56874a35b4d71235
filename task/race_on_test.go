//go:build race

package task_test

// raceBuild: tests that loop a million times loop fewer under -race.
const raceBuild = true
