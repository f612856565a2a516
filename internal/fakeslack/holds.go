package fakeslack

// Download is the method name under which Hold and HoldWhere hold file
// downloads (url_private), which are not Web API calls: a test makes one
// file's download hang while others go through.
const Download = "files.download"
