/* Compiles one public header alone (TEST_HEADER), as C99, C11 or C++. */
#include TEST_HEADER
int main(void) { return 0; }
