// Package inputfile is the one place gradcscg opens the files it reads: run-directory
// files, configuration and layout files, models, checkpoints, data sets and reports.
//
// Open, ReadFile and Digest accept only a regular file, after following symbolic links:
// a named pipe, a device (/dev/zero, /dev/urandom), a socket or a directory is refused
// without reading from it, and the check is repeated on the opened descriptor, so a
// file swapped between the check and the open is refused too. A named pipe never
// blocks the open.
//
// Every read is bounded by a Limit, the most bytes a file of its format may hold,
// declared where the format is defined. A larger file is refused before it is read,
// and one that grows past its limit while it is read fails with ErrTooLarge instead
// of being read further. Bound wraps any reader (a gzip stream's decompressed bytes,
// for example) with the same rule.
//
// Errors name the file and why it is refused.
package inputfile
