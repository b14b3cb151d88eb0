from compactbot.bot.cli import main

main()
