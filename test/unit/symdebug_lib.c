/* symdebug_lib: a library whose static function is named only by its separate debug file.
   VARIANT (set by the test) makes builds differ, so that their build ids do. */
__attribute__((noinline)) static int
symdebug_static_leaf(int x)
{
    return x * 3 + VARIANT;
}

void *
symdebug_leaf_addr(void)
{
    return (void *)symdebug_static_leaf;
}

int
symdebug_call(int x)
{
    return symdebug_static_leaf(x);
}
