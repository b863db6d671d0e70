/* p_exit_now: exits at once with status 5, before the server has even bound. */
int
main(void)
{
    return 5;
}
