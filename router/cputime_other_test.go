//go:build !unix

package router

func processCPU() int64 { return 0 }
