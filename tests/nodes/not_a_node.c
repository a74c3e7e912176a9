/* A shared library that is not a zflow node (no zf_node_declare). */
__attribute__((visibility("default"))) int not_a_node(void);
int not_a_node(void)
{
    return 42;
}
